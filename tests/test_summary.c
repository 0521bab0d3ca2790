/* SPDX-License-Identifier: MIT */
/* Being written. */
#include "harness.h"
