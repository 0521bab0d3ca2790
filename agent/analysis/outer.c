/* SPDX-License-Identifier: MIT */
#include "agent/analysis/outer.h"

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

void agent_outer_frames(struct agent_symbols *s, const struct rb_file_thread *th,
			struct agent_outer *out)
{
	const struct rb_trace *t = s->trace;
	out->n = 0;
	if (!th->nstack || !t->nmodules)
		return;
	/* Outermost first: the stack holds them innermost first. */
	for (uint32_t k = th->nstack; k-- > 0 && out->n < AGENT_OUTER_MAX;) {
		uint64_t ra = th->stack[k];
		if (ra < t->modules[0].bias)
			continue;
		/* The return address follows the call: its caller is the function holding
		 * the call instruction, one byte back. */
		char *name = out->name[out->n];
		uint64_t call = ra - 1 - t->modules[0].bias;
		agent_symbol_name(s, 0, call, name, AGENT_OUTER_NAME);
		const struct rb_symbol *sym =
			agent_symbols_ready(s, 0) ? rb_elf_lookup(&s->elf[0], call) : NULL;
		out->key[out->n] = (uint64_t)1 << 48 | AGENT_KEY_VADDR(sym ? sym->addr : call);
		char *plus = strchr(name, '+');
		if (plus && plus != name && name[0] != '<' && name[0] != '?')
			*plus = '\0'; /* "function+0x1f": the function */
		if (!runtime_frame(name))
			out->n++;
	}
}

uint64_t agent_outer_root(const struct agent_outer *o, const uint64_t *open, size_t nopen)
{
	if (nopen > AGENT_OUTER_MAX)
		return 0;
	size_t j = 0; /* the open calls matched, innermost first */
	for (size_t i = o->n; i-- > 0;) {
		if (j < nopen) {
			j += o->key[i] == open[j]; /* others: untraced functions, stale words */
			continue;
		}
		return o->key[i];
	}
	return 0;
}
