/* SPDX-License-Identifier: MIT */
/* Being written. */
