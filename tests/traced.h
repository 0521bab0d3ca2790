/* SPDX-License-Identifier: MIT */
#ifndef JITT_TESTS_TRACED_H
#define JITT_TESTS_TRACED_H

/* traced_top(x): top -> mid -> leaf, leaf (3 entries, 3 exits). */
int traced_leaf(int x);
int traced_mid(int x);
int traced_top(int x);
/* depth + 1 nested calls */
int traced_recurse(int depth);


void traced_empty(void);
void untraced_empty(void);
#endif
