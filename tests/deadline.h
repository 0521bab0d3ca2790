/* SPDX-License-Identifier: MIT */
/*
 * tests/deadline.h - a bound that only catches a hang. A call that should never block (an
 * open of a FIFO, a read of one) is given a generous time; if it blocks, SIGALRM (installed
 * without SA_RESTART) interrupts it, the call fails with EINTR and the test fails instead
 * of hanging the whole run. Never a measure of how long anything takes.
 */
#ifndef JITT_TESTS_DEADLINE_H
#define JITT_TESTS_DEADLINE_H

#include <signal.h>
#include <string.h>
#include <unistd.h>

#define DEADLINE_SECONDS 20

static void deadline_ring(int sig)
{
	(void)sig; /* the interrupted call's EINTR is the whole point */
}

static inline void deadline_start(void)
{
	struct sigaction sa;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = deadline_ring;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGALRM, &sa, NULL);
	alarm(DEADLINE_SECONDS);
}

static inline void deadline_stop(void)
{
	alarm(0);
	signal(SIGALRM, SIG_DFL);
}

#endif
