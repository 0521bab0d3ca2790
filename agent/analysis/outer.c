/* SPDX-License-Identifier: MIT */
#include "agent/analysis/outer.h"
#include "ringbuf/record.h"

#include <elf.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

/* The runtime's own frames, inner to every traced one: the rare path that scanned the
 * stack, the hooks, the wrappers. */
static bool runtime_frame(const char *name)
{
	static const char *const prefixes[] = { "rb_", "jitt_", "agent_", "__wrap_",
						"__cyg_profile" };
	for (size_t i = 0; i < sizeof(prefixes) / sizeof(prefixes[0]); i++)
		if (strncmp(name, prefixes[i], strlen(prefixes[i])) == 0)
			return true;
	return false;
}

/*
 * What a link from word a to word b, the next frame inward, says of them both, in the
 * units of agent_outer_chain's score. A direct call that lands in b's function is a chain
 * (+2). A call into code without a symbol (a PLT: another module, which may call back)
 * says nothing (0), nor does a call whose code is not here to read. A direct call that
 * lands elsewhere is a break (-5): a tail call leaves no frame for the function called
 * first, but a stale word does that too. An indirect call could land anywhere, which is
 * how stale words get glued into a chain that looks right (pairs of direct calls joined
 * by jumps anywhere): it costs as much as a break. Two words of one function are never
 * both frames unless it calls itself (-5). A word of no known function stands for a's
 * callee (+1 when that is known).
 */
static long link_score(const struct agent_outer_word *a, const struct agent_outer_word *b)
{
	if (a->call == AGENT_CALL_INDIRECT)
		return -5;
	if (!b->func)
		return a->callee ? 1 : 0;
	if (a->func == b->func && a->callee != a->func)
		return -5;
	if (a->call != AGENT_CALL_DIRECT || !a->callee)
		return 0;
	if (b->func == a->callee || b->home == a->callee)
		return 2;
	for (unsigned k = 0; k < a->ntails; k++)
		if (b->func == a->tails[k] || b->home == a->tails[k])
			return 2; /* called, then jumped to: one frame for both */
	return -5;
}

size_t agent_outer_chain(const struct agent_outer_word *w, size_t n, uint64_t *frame)
{
	if (!n)
		return 0;
	memset(frame, 0, n * sizeof(*frame));
	/* The chain ends at the program's innermost frame, the one that called the runtime
	 * (its trace point's rare path, which scanned): a word that calls into it. Words
	 * further in are the runtime's own stack, where a stale word left by an earlier
	 * answer may call into it too: the chain may end at any such word, and the best one
	 * is kept (a stale one inside the answering frame links to it at a loss). */
	size_t end = n;
	for (size_t i = n; i-- > 0 && end == n;)
		if (!w[i].runtime && w[i].callee_runtime)
			end = i;
	size_t last = end < n ? end + 1 : n;
	long *best = malloc(n * sizeof(*best));
	size_t *prev = malloc(n * sizeof(*prev));
	if (!best || !prev) {
		free(best);
		free(prev);
		return 0;
	}
	/*
	 * best[i]: the score of the best chain whose innermost word is i, times 1024, less its
	 * words (at equal scores, the chain that claims less); prev[i]: its word before, or n;
	 * LONG_MIN when i cannot be a frame. jitt's own words never are (a trampoline outside
	 * the program's frames, words left by the runtime's own calls), nor is a word of no
	 * known function but one that can end the chain. A chain that starts after the outermost word of a
	 * known function has left out where the thread began: that costs more than a break
	 * or an indirect call from there would.
	 */
	size_t top = n;
	bool outermost = true;
	for (size_t i = 0; i < last; i++) {
		prev[i] = n;
		best[i] = LONG_MIN;
		bool ends = end < n && !w[i].runtime && w[i].callee_runtime;
		if (w[i].runtime || (!w[i].func && !ends))
			continue;
		best[i] = (outermost ? 0 : -6 * 1024) - 1;
		outermost = false;
		for (size_t j = 0; j < i; j++) {
			if (best[j] == LONG_MIN)
				continue;
			long v = best[j] + 1024 * link_score(&w[j], &w[i]) - 1;
			if (v >= best[i]) { /* at a tie, the nearer word: the likelier caller */
				best[i] = v;
				prev[i] = j;
			}
		}
		if ((end == n || ends) && (top == n || best[i] >= best[top]))
			top = i;
	}
	size_t kept = 0;
	for (size_t i = top; i < n; i = prev[i]) {
		/* A word of no known function stands for the one the word outside it calls:
		 * a trace point's block, apart from the function it belongs to; none when
		 * that is jitt's own (a wrapper's trace point). */
		frame[i] = w[i].func			       ? w[i].func
			   : prev[i] < n && !w[prev[i]].callee_runtime ? w[prev[i]].callee
								      : 0;
		kept += frame[i] != 0;
	}
	free(best);
	free(prev);
	return kept;
}

/*
 * The call instruction that ends at ra: AGENT_CALL_DIRECT with the virtual address it calls
 * in *target, AGENT_CALL_INDIRECT for any other instruction (a call through a register or
 * memory), AGENT_CALL_UNREAD when the code is not here. Only what a compiler emits for a
 * direct call is decoded, in the forms ringbuf/stack.c accepts.
 */
static uint8_t call_at(struct agent_symbols *s, uint64_t ra, uint64_t *target)
{
	uint8_t b[5];
	uint16_t machine;
	if (ra < 5 || agent_symbols_code(s, 0, ra - 5, b, sizeof(b), &machine) != 0)
		return AGENT_CALL_UNREAD;
	int32_t rel;
	uint32_t i;
	memcpy(&i, b + 1, 4); /* the last 4 bytes: an ARM instruction, or x86's rel32 */
	memcpy(&rel, b + 1, 4);
	switch (machine) {
	case EM_X86_64:
	case EM_386:
		if (b[0] != 0xe8) /* call rel32 */
			return AGENT_CALL_INDIRECT;
		*target = ra + (uint64_t)(int64_t)rel;
		return AGENT_CALL_DIRECT;
	case EM_AARCH64: /* BL imm26, in words from the BL */
		if ((i & 0xfc000000u) != 0x94000000u)
			return AGENT_CALL_INDIRECT;
		*target = ra - 4 + (uint64_t)((int64_t)((int32_t)(i << 6) >> 6) * 4);
		return AGENT_CALL_DIRECT;
	case EM_ARM: /* BL imm24, from the BL plus 8; BLX imm changes to Thumb: not decoded */
		if ((i & 0x0f000000u) != 0x0b000000u || (i >> 28) == 0xf)
			return AGENT_CALL_INDIRECT;
		*target = ra - 4 + 8 + (uint64_t)((int64_t)((int32_t)(i << 8) >> 8) * 4);
		return AGENT_CALL_DIRECT;
	default:
		return AGENT_CALL_UNREAD;
	}
}

/* What branch_targets looks for: direct calls, direct jumps (tail calls: GCC's sibling
 * calls at -O2), or both. */
enum { BRANCH_CALLS = 1, BRANCH_JUMPS = 2 };

/*
 * Bytes of code one look at the outer frames may read: the program file and its symbol
 * sizes are the trace writer's (another user's, for jittd), so the work is bounded here
 * as the ELF reader bounds its tables. Measured on bench-real's traces: the frames' tail
 * calls read 9 to 56 KiB, the root's weighing 1 to 33 KiB (duktape, SQLite, memcached).
 */
#define CODE_BUDGET (32u << 20)

static int by_value(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

/*
 * The functions fn's code branches to (kinds: BRANCH_*) by their start, each once, sorted,
 * into out[max]; how many. Read as the direct calls or jumps of the file's architecture
 * that land on a symbol's first byte: a byte pattern inside another instruction would
 * have to land exactly on a function's start, which leaves the false ones rare. At most
 * *budget bytes are read, and taken from it.
 */
static size_t branch_targets(struct agent_symbols *s, const struct rb_symbol *fn,
			     unsigned kinds, uint64_t *out, size_t max, size_t *budget)
{
	enum { MAX_CODE = 1 << 20 }; /* a function's bytes read at most */
	uint64_t size = fn->size < MAX_CODE ? fn->size : MAX_CODE;
	size = size < *budget ? size : *budget;
	uint8_t *code = size >= 4 ? malloc(size) : NULL;
	uint16_t machine;
	size_t n = 0;
	if (!code || agent_symbols_code(s, 0, fn->addr, code, size, &machine) != 0) {
		free(code);
		return 0;
	}
	*budget -= size;
	const struct rb_elf *elf = &s->elf[0];
	bool calls = kinds & BRANCH_CALLS, jumps = kinds & BRANCH_JUMPS;
	for (uint64_t i = 0; i + 4 <= size && n < max; i++) {
		uint64_t to = 0;
		int32_t rel;
		uint32_t insn;
		memcpy(&insn, code + i, 4);
		uint32_t a64 = insn & 0xfc000000u, a32 = insn & 0x0f000000u;
		if (machine == EM_X86_64 && i + 5 <= size &&
		    ((calls && code[i] == 0xe8) || (jumps && code[i] == 0xe9))) { /* call, jmp rel32 */
			memcpy(&rel, code + i + 1, 4);
			to = fn->addr + i + 5 + (uint64_t)(int64_t)rel;
		} else if (machine == EM_AARCH64 && !(i & 3) &&
			   ((calls && a64 == 0x94000000u) || (jumps && a64 == 0x14000000u))) { /* BL, B */
			to = fn->addr + i + (uint64_t)((int64_t)((int32_t)(insn << 6) >> 6) * 4);
		} else if (machine == EM_ARM && !(i & 3) && (insn >> 28) != 0xf &&
			   ((calls && a32 == 0x0b000000u) || (jumps && a32 == 0x0a000000u))) {
			to = fn->addr + i + 8 + (uint64_t)((int64_t)((int32_t)(insn << 8) >> 8) * 4);
		}
		const struct rb_symbol *t = to && to != fn->addr ? rb_elf_lookup(elf, to) : NULL;
		if (t && t->addr == to)
			out[n++] = to;
	}
	free(code);
	qsort(out, n, sizeof(*out), by_value);
	size_t u = 0;
	for (size_t k = 0; k < n; k++)
		if (!u || out[u - 1] != out[k])
			out[u++] = out[k];
	return u;
}

/* The start of the function whose ".cold" part sym is (GCC's "name.cold", "name.cold.3"),
 * by name; else sym's own start. */
static uint64_t home_of(const struct rb_elf *elf, const struct rb_symbol *sym)
{
	const char *cold = strstr(sym->name, ".cold");
	if (!cold)
		return sym->addr;
	size_t len = (size_t)(cold - sym->name);
	for (size_t k = 0; k < elf->nsyms; k++)
		if (strncmp(elf->syms[k].name, sym->name, len) == 0 &&
		    elf->syms[k].name[len] == '\0')
			return elf->syms[k].addr;
	return sym->addr;
}

/* The low half of the tag of the ring's newest record; false when there is none to read. */
static bool newest_low(const struct rb_ring_view *v, uint32_t *low)
{
	if (!rb_ring_view_ok(v) || !v->valid)
		return false;
	uint64_t last = v->end ? v->end - 1 : v->nslots - 1;
	if (last >= v->stored)
		return false;
	*low = rb_tag_low(v->slots[last]);
	return true;
}

/* Whether the ring's newest record is one a program function's trace point writes: an
 * entry or an exit (or the sync of a wrap, which a trace point's slow path writes). Any
 * other, a wait's or a mark's, the runtime wrote for the frame that called it; so did a
 * counted call's thunk (RB_CALLED), which answers before the function's body runs: its
 * caller is the innermost frame on the stack, and running (cct.c keeps the counted call
 * out of the open ones). */
static bool answered_by_trace_point(const struct rb_ring_view *v)
{
	uint32_t low;
	return !newest_low(v, &low) || !rb_two_slots(low) || low == RB_WIDE || low == RB_SYNC;
}

void agent_outer_frames(struct agent_symbols *s, const struct rb_file_thread *th,
			struct agent_outer *out)
{
	const struct rb_trace *t = s->trace;
	out->n = 0;
	out->waiting = th->copied || !answered_by_trace_point(&th->view);
	uint32_t low = 0;
	bool newest = !th->copied && newest_low(&th->view, &low);
	out->entered = newest && (low >= RB_FIRST_ID || low == RB_WIDE);
	if (!th->nstack || !t->nmodules)
		return;
	struct agent_outer_word *w = malloc(th->nstack * sizeof(*w));
	uint64_t *at = malloc(th->nstack * sizeof(*at));
	uint64_t *frame = malloc(th->nstack * sizeof(*frame));
	if (!w || !at || !frame)
		goto out;
	bool named = agent_symbols_ready(s, 0);
	const struct rb_elf *elf = named ? &s->elf[0] : NULL;
	/* Outermost first: the stack holds them innermost first. */
	size_t n = 0, budget = CODE_BUDGET;
	for (uint32_t k = th->nstack; k-- > 0;) {
		uint64_t ra = th->stack[k];
		if (ra <= t->modules[0].bias)
			continue;
		/* The return address follows the call: its caller is the function holding
		 * the call instruction, one byte back. */
		ra -= t->modules[0].bias;
		const struct rb_symbol *sym = elf ? rb_elf_lookup(elf, ra - 1) : NULL;
		uint64_t target = 0;
		w[n].call = named ? call_at(s, ra, &target) : AGENT_CALL_UNREAD;
		const struct rb_symbol *cs = target ? rb_elf_lookup(elf, target) : NULL;
		at[n] = ra - 1;
		w[n].func = sym ? sym->addr : 0;
		w[n].home = sym ? home_of(elf, sym) : 0;
		w[n].callee = cs ? cs->addr : 0;
		w[n].runtime = sym && runtime_frame(sym->name);
		w[n].callee_runtime = cs && runtime_frame(cs->name);
		const struct agent_outer_word *same = NULL; /* read once per callee */
		for (size_t j = 0; cs && j < n && !same; j++)
			same = w[j].callee == w[n].callee ? &w[j] : NULL;
		if (same) {
			w[n].ntails = same->ntails;
			memcpy(w[n].tails, same->tails, sizeof(w[n].tails));
		} else {
			uint64_t jumps[64]; /* a function's few tail calls, each maybe often */
			size_t nj = cs ? branch_targets(s, cs, BRANCH_JUMPS, jumps, 64, &budget)
				       : 0;
			w[n].ntails = (uint8_t)(nj < AGENT_OUTER_TAILS ? nj : AGENT_OUTER_TAILS);
			memcpy(w[n].tails, jumps, w[n].ntails * sizeof(*jumps));
		}
		n++;
	}
	/* A counted call's thunk answered, reached by a jump from the function's sled: no
	 * word of the program calls the runtime, and an older word's call of a wrapper ended
	 * the chain (SQLite's `printf_core > __fwritex`, calling memcpy's). The innermost of
	 * the program's words is the frame whose call led to the counted function, directly
	 * or through tail calls (groupConcatStep jumps to sqlite3_str_append, which jumps to
	 * memcpy): it ends the chain, as a call of the runtime would. */
	for (size_t i = n; newest && low == RB_CALLED && i-- > 0;)
		if (!w[i].runtime && w[i].func) {
			w[i].callee_runtime = true;
			break;
		}
	/* A blocking-call wrapper bound through the GOT (agent/runtime/bind.c, glibc) is
	 * reached through the program's PLT, code of no symbol: with no word of the program
	 * calling the runtime by name, the innermost one, if it calls such code directly and
	 * a word of the runtime lies inside it, ends the chain as that call would. */
	bool calls_runtime = false;
	for (size_t i = 0; i < n; i++)
		calls_runtime |= !w[i].runtime && w[i].callee_runtime;
	for (size_t i = n; !calls_runtime && i-- > 0;) {
		if (w[i].runtime || !w[i].func)
			continue;
		bool runtime_inside = false;
		for (size_t j = i + 1; j < n && !runtime_inside; j++)
			runtime_inside = w[j].runtime;
		w[i].callee_runtime = w[i].call == AGENT_CALL_DIRECT && !w[i].callee &&
				      runtime_inside;
		break;
	}
	bool code = false; /* the program's code is here: its calls tell frames apart */
	for (size_t i = 0; i < n && !code; i++)
		code = w[i].call != AGENT_CALL_UNREAD;
	if (code) {
		agent_outer_chain(w, n, frame);
	} else { /* nothing to tell a frame from a stale word by: every word but jitt's */
		for (size_t i = 0; i < n; i++)
			frame[i] = w[i].runtime ? 0 : w[i].func ? w[i].func : at[i];
	}
	for (size_t i = 0; i < n && out->n < AGENT_OUTER_MAX; i++) {
		if (!frame[i])
			continue;
		char *name = out->name[out->n];
		agent_symbol_name(s, 0, frame[i], name, AGENT_OUTER_NAME);
		out->key[out->n] = (uint64_t)1 << 48 | AGENT_KEY_VADDR(frame[i]);
		out->callee[out->n] = w[i].callee ? (uint64_t)1 << 48 | w[i].callee : 0;
		out->n++;
	}
out:
	free(w);
	free(at);
	free(frame);
}

/* The index of the frame agent_outer_root names, or SIZE_MAX. */
static size_t root_index(const struct agent_outer *o, const uint64_t *open, size_t nopen)
{
	if (nopen > AGENT_OUTER_MAX)
		return SIZE_MAX;
	bool running = o->waiting; /* the innermost frame is running, its call not the ring's */
	if (o->entered && nopen && o->n &&
	    !(o->key[o->n - 1] == open[0] || (o->n > 1 && o->key[o->n - 2] == open[0]))) {
		open++, nopen--; /* entered by a thunk, before it had a frame */
		running = true;
	}
	size_t j = 0; /* the open calls matched, innermost first */
	for (size_t i = o->n; i-- > 0;) {
		/* The innermost frame is the one whose trace point answered the stop. When
		 * its call is not open, that was its exit: the call is whole in the ring. */
		if (i == o->n - 1 && !running && (!nopen || o->key[i] != open[0]))
			continue;
		while (j < nopen && o->key[i] != open[j] && o->callee[i] == open[j])
			j++; /* this frame called it, and it jumped on: a tail call */
		if (j < nopen) {
			j += o->key[i] == open[j]; /* others: untraced functions, stale words */
			continue;
		}
		return i;
	}
	return SIZE_MAX;
}

uint64_t agent_outer_root(const struct agent_outer *o, const uint64_t *open, size_t nopen)
{
	size_t i = root_index(o, open, nopen);
	return i == SIZE_MAX ? 0 : o->key[i];
}

void agent_root_calls(const struct cct *c, struct agent_root_calls *rc)
{
	rc->n = 0;
	for (uint32_t k = c->n ? c->node[0].first_child : CCT_NONE; k != CCT_NONE;
	     k = c->node[k].next_sibling) {
		uint64_t calls = c->node[k].s[CCT_WHOLE].calls;
		size_t at = rc->n < AGENT_ROOT_CALLS ? rc->n++ : AGENT_ROOT_CALLS;
		if (at == AGENT_ROOT_CALLS) { /* full: in place of the least called, if more */
			at = 0;
			for (size_t i = 1; i < AGENT_ROOT_CALLS; i++)
				at = rc->calls[i] < rc->calls[at] ? i : at;
			if (rc->calls[at] >= calls)
				continue;
		}
		rc->key[at] = c->node[k].func;
		rc->calls[at] = calls;
	}
}

/*
 * The functions fn's code reaches in two steps of direct calls and jumps (it, and what it
 * calls, which may be untraced helpers the root's calls came through), into out[max]:
 * how many. The first step's root calls are read too: a function that learning took out
 * of the trace for a while has its calls of that while at the root (duktape's
 * `duk__executor_handle_call`, 423 calls at the root of a remembered fib trace, where the
 * `duk__handle_call_raw` it calls had 62,634), and while it was traced its calls are
 * inside it, where they add nothing to a frame's count.
 */
static size_t reached(struct agent_symbols *s, const struct rb_symbol *fn, uint64_t *out,
		      size_t max, size_t *budget)
{
	const unsigned both = BRANCH_CALLS | BRANCH_JUMPS;
	size_t n = branch_targets(s, fn, both, out, max, budget);
	size_t first = n;
	for (size_t k = 0; k < first && n < max; k++) {
		const struct rb_symbol *g = rb_elf_lookup(&s->elf[0], out[k]);
		if (g)
			n += branch_targets(s, g, both, out + n, max - n, budget);
	}
	return n;
}

uint64_t agent_outer_root_of(struct agent_symbols *s, const struct agent_outer *o,
			     const uint64_t *open, size_t nopen, const struct agent_root_calls *rc)
{
	enum { LOOK = 16, TARGETS = 1 << 16 }; /* frames weighed; functions reached of each */
	size_t first = root_index(o, open, nopen), best = first;
	uint64_t most = 0, all = 0;
	for (size_t r = 0; r < rc->n; r++)
		all += AGENT_KEY_MODULE(rc->key[r]) == 0 ? rc->calls[r] : 0;
	uint64_t *to = first != SIZE_MAX && all ? malloc(TARGETS * sizeof(*to)) : NULL;
	size_t budget = CODE_BUDGET;
	for (size_t back = 0; to && first != SIZE_MAX && back < LOOK && back <= first; back++) {
		size_t i = first - back;
		const struct rb_symbol *fn =
			AGENT_KEY_MODULE(o->key[i]) == 0 && agent_symbols_ready(s, 0)
				? rb_elf_lookup(&s->elf[0], AGENT_KEY_VADDR(o->key[i]))
				: NULL;
		if (!fn)
			continue;
		size_t n = reached(s, fn, to, TARGETS, &budget);
		qsort(to, n, sizeof(*to), by_value); /* two steps' lists, each sorted */
		uint64_t made = 0; /* the root's calls this frame's code could make */
		for (size_t r = 0; r < rc->n; r++) {
			uint64_t at = AGENT_KEY_VADDR(rc->key[r]);
			if (AGENT_KEY_MODULE(rc->key[r]) == 0 &&
			    bsearch(&at, to, n, sizeof(*to), by_value))
				made += rc->calls[r];
		}
		if (made > most) { /* at a tie, the inner frame */
			most = made;
			best = i;
		}
		/* A frame that could have made (nearly) every call the root made may have
		 * been there throughout: the innermost such is the root's. Further out, a
		 * frame's code reaches more of the program in two steps, not by running
		 * the loop: on duktape's throw the executor (88% of the root's calls) is the
		 * root's frame, the call handler around it reaches 93%. */
		if (made >= all - all / 4)
			break;
	}
	free(to);
	return best == SIZE_MAX ? 0 : o->key[best];
}
