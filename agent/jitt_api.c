/* SPDX-License-Identifier: MIT */
/* The public API of agent/jitt.h, on top of ringbuf's control side. */
#include "agent/jitt.h"
#include "hal/timer.h"
#include "ringbuf/ring.h"

#include <errno.h>

#define API __attribute__((no_instrument_function))

API int jitt_trace_thread(bool on)
{
	/* The timer must be probed before the first trace point reads it. */
	int err = hal_timer_init();
	if (err)
		return err;
	return rb_trace_self(on);
}

API int jitt_thread_name(const char *name)
{
	if (!name)
		return -EINVAL;
	int err = rb_thread_set_name(name);
	if (err == -ENOENT) {
		err = rb_thread_register(name);
	}
	return err;
}
