# SPDX-License-Identifier: MIT
#
# gen-tree.awk - writes the UI thread's call tree for jank-sim (sim/README.md) as C, on
# stdout: about 300 functions in four phases that every frame runs, in this order:
#
#   input_dispatch > input_* > gesture_* > hit_test_* > hit_rect_*
#   anim_tick      > anim_* > interp_* > spring_* > curve_*
#   layout_traversal > layout_* > measure_* > measure_child_* > text_layout_* > text_shape_*
#                    > font_* > glyph_* > cache_*
#   draw_traversal > draw_* > draw_child_* > paint_* > canvas_* > raster_* > span_* > blend_*
#
# and util_* leaves that any layer calls, so one function has several calling contexts as
# in real code. The graph is fixed, as a program's is: no input changes it, and the same
# script always writes the same file (its own random numbers, Park-Miller, so mawk and gawk
# agree). Every function runs every frame: each one of a layer has its guaranteed caller in
# the layer above, plus random extra callers; some calls run in a loop ("for each child").
# Three functions deep in the tree hold the injection sites of the jank scenarios
# (sim_inject_point, sim/sim.h).
#
# The totals per frame (calls, work weight) are computed here, where the graph is known,
# and written as constants: sim/ui.c scales the work to the frame time asked for.
#
# Usage: awk -f sim/gen-tree.awk > tree.c
#        awk -v suffix=_plain -f sim/gen-tree.awk > tree_plain.c
# suffix is appended to every name the file defines (functions and totals): a second copy of
# the tree, built without instrumentation, can then be linked next to the traced one, as
# bench-peers does (tests/peers_sim.c) to time both in one process.

function rnd(n) {
	seed = (seed * 16807) % 2147483647
	return seed % n
}

# Layer names of a phase: the first is the phase's root, a single function.
function phase(p, names,    k, parts) {
	nph++
	phname[nph] = p
	nl = split(names, parts, " ")
	phlayers[nph] = nl
	for (k = 1; k <= nl; k++)
		lname[nph, k] = parts[k]
}

function fname(ph, l, i,    n) {
	if (l == 1)
		return lname[ph, 1]
	n = nouns[(i * 7 + l * 3 + ph) % nnouns + 1]
	return lname[ph, l] "_" n "_" i
}

BEGIN {
	seed = 20220711
	nnouns = split("list row header image label button card icon scroll grid badge " \
		"avatar chip toolbar tab panel", nouns, " ")

	phase("input", "input_dispatch input gesture hit_test hit_rect")
	phase("anim", "anim_tick anim interp spring curve")
	phase("layout", "layout_traversal layout measure measure_child text_layout text_shape " \
		"font glyph cache")
	phase("draw", "draw_traversal draw draw_child paint canvas raster span blend")

	# Functions per layer (index 1 is the root).
	split("1 3 6 8 8", w1, " ")
	split("1 3 6 8 6", w2, " ")
	split("1 4 8 14 18 20 20 16 10", w3, " ")
	split("1 4 8 14 18 18 14 8", w4, " ")
	for (k = 1; k <= phlayers[1]; k++) width[1, k] = w1[k]
	for (k = 1; k <= phlayers[2]; k++) width[2, k] = w2[k]
	for (k = 1; k <= phlayers[3]; k++) width[3, k] = w3[k]
	for (k = 1; k <= phlayers[4]; k++) width[4, k] = w4[k]

	# Loop counts of the calls from a layer to the next: where real UI code iterates
	# ("for each child view", "for each text run"); everywhere else a call runs once.
	loop[3, 1] = 3; loop[3, 3] = 2; loop[3, 5] = 2
	loop[4, 1] = 3; loop[4, 4] = 2
	loop[1, 2] = 2; loop[2, 1] = 2

	# Injection sites (sim/sim.h): the first function of a layer runs the site's check.
	site[3, 8] = "SIM_SITE_DEEP"  # glyph_*, 8 calls below sim_ui_frame
	site[3, 4] = "SIM_SITE_IMAGE" # measure_child_*
	site[4, 6] = "SIM_SITE_RASTER" # raster_*

	nutil = 40
	split("hash rect str alloc clip matrix color list", ukinds, " ")
	for (u = 1; u <= nutil; u++)
		uname[u] = "util_" ukinds[(u - 1) % 8 + 1] "_" u

	nfn = 0
	for (ph = 1; ph <= nph; ph++) {
		for (l = 1; l <= phlayers[ph]; l++) {
			for (i = 1; i <= width[ph, l]; i++) {
				nfn++
				id[ph, l, i] = nfn
				name[nfn] = fname(ph, l, i) suffix
				weight[nfn] = 1 + rnd(6)
				ncallee[nfn] = 0
				mult[nfn] = 0
				if (l == 1)
					mult[nfn] = 1
			}
		}
	}
	for (u = 1; u <= nutil; u++) {
		nfn++
		uid[u] = nfn
		name[nfn] = uname[u] suffix
		weight[nfn] = 1 + rnd(2)
		ncallee[nfn] = 0
		mult[nfn] = 0
	}

	# Edges: each function of layer l+1 has its guaranteed caller (i mod the width of
	# layer l), one in three callers gets an extra callee, about one in three functions
	# calls a util_* leaf.
	for (ph = 1; ph <= nph; ph++) {
		for (l = 1; l < phlayers[ph]; l++) {
			reps = ((ph, l) in loop) ? loop[ph, l] : 1
			for (j = 1; j <= width[ph, l + 1]; j++) {
				c = id[ph, l, (j - 1) % width[ph, l] + 1]
				edge(c, id[ph, l + 1, j], reps)
			}
			for (i = 1; i <= width[ph, l]; i++) {
				if (rnd(3) == 0) {
					c = id[ph, l, i]
					edge(c, id[ph, l + 1, 1 + rnd(width[ph, l + 1])], 1)
				}
			}
		}
		for (l = 2; l <= phlayers[ph]; l++)
			for (i = 1; i <= width[ph, l]; i++)
				if (rnd(3) == 0)
					edge(id[ph, l, i], uid[1 + rnd(nutil)], 1 + rnd(3))
	}
	# Every util_* leaf has at least one caller: the last layer of layout and draw.
	for (u = 1; u <= nutil; u++) {
		ph = 3 + u % 2
		l = phlayers[ph]
		edge(id[ph, l, 1 + u % width[ph, l]], uid[u], 1)
	}

	# Calls per frame: a function's count is the sum over its calls of the caller's count
	# times the loop count. Layers in order, util leaves last (they call nothing).
	for (ph = 1; ph <= nph; ph++)
		for (l = 1; l <= phlayers[ph]; l++)
			for (i = 1; i <= width[ph, l]; i++) {
				f = id[ph, l, i]
				for (e = 1; e <= ncallee[f]; e++)
					mult[callee[f, e]] += mult[f] * creps[f, e]
			}
	calls = 0
	work = 0
	for (f = 1; f <= nfn; f++) {
		calls += mult[f]
		work += mult[f] * weight[f]
	}

	print "/* Generated by sim/gen-tree.awk: do not edit. */"
	print "#include \"sim/sim.h\""
	print ""
	printf "const unsigned sim_tree_functions%s = %d;\n", suffix, nfn
	printf "const unsigned long sim_tree_calls%s = %d;  /* per frame */\n", suffix, calls
	printf "const unsigned long sim_tree_weight%s = %d; /* per frame */\n", suffix, work
	print ""
	for (f = 1; f <= nfn; f++)
		printf "uint32_t %s(uint32_t x);\n", name[f]
	for (ph = 1; ph <= nph; ph++)
		for (l = 1; l <= phlayers[ph]; l++)
			for (i = 1; i <= width[ph, l]; i++)
				body(id[ph, l, i], (i == 1 && ((ph, l) in site)) ? site[ph, l] : "")
	for (u = 1; u <= nutil; u++)
		body(uid[u], "")
}

function edge(from, to, reps) {
	ncallee[from]++
	callee[from, ncallee[from]] = to
	creps[from, ncallee[from]] = reps
}

# A function works a little, calls its callees (in a loop where the layer says so), runs
# its injection site's check if it has one, and works a little more: self time before and
# after its children, as in a measure or draw method.
function body(f, s,    e, pre) {
	pre = int(weight[f] / 2)
	printf "\nSIM_FN uint32_t %s(uint32_t x)\n{\n", name[f]
	if (pre > 0)
		printf "\tx = sim_work(x, %d);\n", pre
	for (e = 1; e <= ncallee[f]; e++) {
		if (creps[f, e] == 1)
			printf "\tx = %s(x);\n", name[callee[f, e]]
		else
			printf "\tfor (uint32_t i = 0; i < %d; i++)\n\t\tx = %s(x + i);\n",
				creps[f, e], name[callee[f, e]]
	}
	if (s != "")
		printf "\tx = sim_inject_point(%s, x);\n", s
	printf "\treturn sim_work(x, %d);\n}\n", weight[f] - pre
}
