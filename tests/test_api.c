/* SPDX-License-Identifier: MIT */
#include "harness.h"
#include "agent/jitt.h"
#include "ringbuf/ring.h"
#include "ringbuf/trace.h"
#include "tests/traced.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>

/* Only a running runtime traces: start one on this test's folder. */
static void start_runtime(void)
{
	char conf[512];
	snprintf(conf, sizeof(conf), "%s/jitt.conf", test_tmpdir());
	FILE *f = fopen(conf, "w");
	fprintf(f, "data_dir = %s/data\nrun_dir = %s/run\nlog_level = error\n", test_tmpdir(),
		test_tmpdir());
	fclose(f);
	CHECK_EQ_INT(jitt_init(conf), 0);
}

TEST(api_trace_thread_on_off_and_name)
{
	CHECK_EQ_INT(jitt_trace_thread(true), -ENODEV); /* not started */
	start_runtime();
	CHECK_EQ_INT(jitt_thread_name("ui"), 0); /* named before it has a ring */
	CHECK_EQ_INT(jitt_trace_thread(true), 0);
	uintptr_t before = atomic_load(&rb_tls.pos) & ~RB_POS_CLOCK;
	traced_empty();
	CHECK_EQ_U64((atomic_load(&rb_tls.pos) & ~RB_POS_CLOCK) - before, 16);
	CHECK_EQ_INT(jitt_trace_thread(false), 0);
	CHECK_EQ_U64(atomic_load(&rb_tls.pos), 0);
	traced_empty(); /* off: nothing written, nothing crashes */
	CHECK_EQ_INT(jitt_thread_name(NULL), -EINVAL);
	struct rb_ring *r;
	rb_lock();
	CHECK_EQ_INT(rb_rings(&r, 1), 1);
	rb_unlock();
	CHECK_EQ_INT(rb_thread_unregister(), 0);
	jitt_shutdown();
}

static void *third(void *arg)
{
	(void)arg;
	return (void *)(intptr_t)jitt_trace_thread(true);
}

TEST(api_more_threads_than_rings_get_ebusy)
{
	start_runtime();
	CHECK_EQ_INT(rb_set_max_threads(1), 0);
	CHECK_EQ_INT(jitt_trace_thread(true), 0);
	pthread_t t;
	void *ret;
	pthread_create(&t, NULL, third, NULL);
	pthread_join(t, &ret);
	CHECK_EQ_INT((intptr_t)ret, -EBUSY);
	CHECK_EQ_INT(jitt_trace_thread(false), 0);
	CHECK_EQ_INT(rb_thread_unregister(), 0);
	CHECK_EQ_INT(rb_set_max_threads(CONFIG_RB_MAX_TRACED_THREADS), 0);
	jitt_shutdown();
}
