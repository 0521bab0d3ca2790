/* SPDX-License-Identifier: MIT */
/* What the plain build inlined everywhere, as an exclude list: agent/analysis/inlined.h. */
#include "agent/analysis/inlined.h"
#include "agent/analysis/exclude.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static int by_name(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static void free_names(char **v, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(v[i]);
	free(v);
}

/* The distinct source names of elf's function symbols (up to the first '.'), sorted. */
static int names_of(const struct rb_elf *elf, char ***out, size_t *n)
{
	char **v = malloc((elf->nsyms ? elf->nsyms : 1) * sizeof(*v));
	if (!v)
		return -ENOMEM;
	size_t k = 0;
	for (size_t i = 0; i < elf->nsyms; i++) {
		const char *s = elf->syms[i].name;
		size_t len = strcspn(s, ".");
		if (!len)
			continue;
		if (!(v[k] = strndup(s, len))) {
			free_names(v, k);
			return -ENOMEM;
		}
		k++;
	}
	qsort(v, k, sizeof(*v), by_name);
	size_t u = 0;
	for (size_t i = 0; i < k; i++) {
		if (u && strcmp(v[u - 1], v[i]) == 0)
			free(v[i]);
		else
			v[u++] = v[i];
	}
	*out = v;
	*n = u;
	return 0;
}

/* A name C reserves for the implementation: the compiler's helpers (__divti3), the libc's,
 * and jitt's wrappers (__wrap_read), which the instrumented build links and the plain one
 * does not. None carries a trace point. */
static bool reserved(const char *name)
{
	return name[0] == '_' && (name[1] == '_' || (name[1] >= 'A' && name[1] <= 'Z'));
}

static bool has(char *const *v, size_t n, const char *name)
{
	return bsearch(&name, v, n, sizeof(*v), by_name) != NULL;
}

/*
 * Which candidates are part of a kept name: every substring of every kept name is looked
 * up in a hash set of the candidates, hashed as it grows by one character (FNV-1a), so a
 * program of n names of length L costs n L^2 / 2 steps, not one strstr per pair of names.
 */
struct cands {
	uint32_t *slot; /* index + 1 into the candidates; 0 empty */
	size_t cap;
};

static uint64_t fnv_step(uint64_t h, char c)
{
	return (h ^ (unsigned char)c) * 0x100000001b3ull;
}
#define FNV_INIT 0xcbf29ce484222325ull

static uint64_t fnv(const char *s)
{
	uint64_t h = FNV_INIT;
	while (*s)
		h = fnv_step(h, *s++);
	return h;
}

static void mark_clashes(char *const *cand, size_t ncand, bool *clash, char *const *kept,
			 size_t nkept, const struct cands *set)
{
	for (size_t k = 0; k < nkept; k++) {
		const char *name = kept[k];
		size_t len = strlen(name);
		for (size_t i = 0; i < len; i++) {
			uint64_t h = FNV_INIT;
			for (size_t j = i; j < len; j++) {
				h = fnv_step(h, name[j]);
				size_t L = j - i + 1;
				for (size_t s = h & (set->cap - 1); set->slot[s];
				     s = (s + 1) & (set->cap - 1)) {
					size_t c = set->slot[s] - 1;
					if (c < ncand && strlen(cand[c]) == L &&
					    memcmp(cand[c], name + i, L) == 0)
						clash[c] = true;
				}
			}
		}
	}
}

int inlined_select(const struct rb_elf *plain, const struct rb_elf *instr,
		   struct inlined_result *r)
{
	memset(r, 0, sizeof(*r));
	char **p = NULL, **q = NULL, **kept = NULL, **cand = NULL;
	size_t np = 0, nq = 0, nkept = 0, ncand = 0;
	bool *clash = NULL;
	struct cands set = { NULL, 0 };
	int e = names_of(plain, &p, &np);
	if (!e)
		e = names_of(instr, &q, &nq);
	if (e)
		goto out;
	e = -ENOMEM;
	kept = malloc((nq ? nq : 1) * sizeof(*kept));
	cand = malloc((nq ? nq : 1) * sizeof(*cand));
	clash = calloc(nq ? nq : 1, sizeof(*clash));
	r->list = malloc((nq ? nq : 1) * sizeof(*r->list));
	if (!kept || !cand || !clash || !r->list)
		goto out;
	for (size_t i = 0; i < nq; i++) {
		if (has(p, np, q[i]))
			kept[nkept++] = q[i];
		else if (reserved(q[i]))
			r->reserved++;
		else if (exclude_listable(q[i]))
			cand[ncand++] = q[i];
		else
			r->unlistable++;
	}
	for (set.cap = 16; set.cap < 2 * ncand; set.cap *= 2)
		;
	if (!(set.slot = calloc(set.cap, sizeof(*set.slot))))
		goto out;
	for (size_t c = 0; c < ncand; c++) {
		size_t s = fnv(cand[c]) & (set.cap - 1);
		while (set.slot[s])
			s = (s + 1) & (set.cap - 1);
		set.slot[s] = (uint32_t)(c + 1);
	}
	mark_clashes(cand, ncand, clash, kept, nkept, &set);
	for (size_t c = 0; c < ncand; c++) {
		if (clash[c]) {
			r->clash++;
			continue;
		}
		if (!(r->list[r->nlist] = strdup(cand[c])))
			goto out;
		r->nlist++;
	}
	r->plain = np;
	r->instr = nq;
	r->kept = nkept;
	r->inlined = nq - nkept - r->reserved;
	e = 0;
out:
	if (e)
		inlined_free(r);
	free_names(p, np);
	free_names(q, nq);
	free(kept);
	free(cand);
	free(clash);
	free(set.slot);
	return e;
}

void inlined_free(struct inlined_result *r)
{
	free_names(r->list, r->nlist);
	memset(r, 0, sizeof(*r));
}
