// tests/viewer-drive.js - one export opened in speedscope inside headless Chromium, for
// tests/viewer-check.sh (which fetches speedscope, runs this once per file and counts).
// No npm dependency: Chromium is driven over the DevTools protocol on a pipe
// (--remote-debugging-pipe: NUL-terminated JSON, we write fd 3 and read fd 4), and the
// app and the export are served by node's http module on 127.0.0.1, an ephemeral port
// (speedscope fetches #profileURL only over http or https).
//
// usage: node viewer-drive.js probe
//        node viewer-drive.js APP_DIR FILE CULPRIT OUT_PREFIX
// Environment: CHROMIUM (default /usr/bin/chromium); JITT_TEST_PATIENCE scales the waits
// (6 by default, as in tests/check-lib.sh: a wait's bound only turns a hang into a failure).
// Prints one line per check, "<check> ok|fail TEXT" for import, culprit and screenshot,
// or "skip REASON" when Chromium cannot start or has no WebGL (speedscope draws with it).
// Exit status: 0 all ok, 1 a check failed, 77 skipped.
'use strict';
const { spawn } = require('child_process');
const fs = require('fs');
const http = require('http');
const os = require('os');
const path = require('path');

const patience = Number(process.env.JITT_TEST_PATIENCE) || 6;
const BOUND_MS = 20000 * patience; // 120 s by default, for any one event we wait for
// but the import, which took 57 s for a well-formed 32 MB Chrome export of the hang
// scenario (528,198 events), alone on this 2-core machine: 360 s by default.
const IMPORT_MS = 60000 * patience;
const SKIP = 77;

// ---- Chromium on a pipe ----
// The flags: headless, no GPU (WebGL then falls back to SwiftShader, which newer Chromium
// only allows when asked, hence --enable-unsafe-swiftshader), no sandbox as root (it
// refuses to start otherwise), and nothing that calls out: this machine's network is
// closed, and without these Chromium keeps retrying Google's services at every start.
function startChromium(browser, userDir) {
	const args = ['--headless', '--disable-gpu', '--enable-unsafe-swiftshader',
		'--use-angle=swiftshader', '--remote-debugging-pipe', `--user-data-dir=${userDir}`,
		'--no-first-run', '--no-default-browser-check', '--disable-background-networking',
		'--disable-component-update', '--disable-sync', '--disable-quic',
		'--disable-extensions', '--mute-audio', '--hide-scrollbars', 'about:blank'];
	if (process.getuid && process.getuid() === 0) args.unshift('--no-sandbox');
	// Its own process group (detached), so that closing it ends its helpers too.
	const child = spawn(browser, args,
		{ stdio: ['ignore', 'ignore', 'pipe', 'pipe', 'pipe'], detached: true });
	let stderr = '';
	child.stderr.on('data', d => { stderr = (stderr + d).slice(-4000); });
	child.stderrTail = () => stderr.trim().split('\n').slice(-3).join(' | ');
	return child;
}

// The protocol: each message one JSON text ended by a NUL byte. Replies carry the id of
// their command; events carry a method, and a sessionId when they come from a page.
function cdpClient(child) {
	const pending = new Map();
	const listeners = new Set();
	let nextId = 1, chunks = [], dead = null;
	child.stdio[4].on('data', data => {
		let start = 0, nul;
		while ((nul = data.indexOf(0, start)) !== -1) {
			chunks.push(data.subarray(start, nul));
			const msg = JSON.parse(Buffer.concat(chunks).toString('utf8'));
			chunks = [];
			start = nul + 1;
			if (msg.id !== undefined && pending.has(msg.id)) {
				const p = pending.get(msg.id);
				pending.delete(msg.id);
				if (msg.error) p.reject(new Error(`${p.method}: ${msg.error.message}`));
				else p.resolve(msg.result);
			} else if (msg.method) {
				for (const fn of listeners) fn(msg);
			}
		}
		if (start < data.length) chunks.push(data.subarray(start));
	});
	child.stdio[3].on('error', () => {}); // a closed pipe shows as the exit below
	child.on('exit', (code, signal) => {
		dead = new Error(`chromium exited (${signal || 'status ' + code}): ${child.stderrTail()}`);
		for (const p of pending.values()) p.reject(dead);
		pending.clear();
		for (const fn of listeners) fn({ method: 'jitt.exited', error: dead });
	});
	return {
		send(method, params = {}, sessionId) {
			if (dead) return Promise.reject(dead);
			const id = nextId++;
			const msg = { id, method, params };
			if (sessionId) msg.sessionId = sessionId;
			child.stdio[3].write(JSON.stringify(msg) + '\0');
			return new Promise((resolve, reject) => pending.set(id, { resolve, reject, method }));
		},
		on(fn) { listeners.add(fn); return () => listeners.delete(fn); },
	};
}

// A promise bounded by BOUND_MS: the bound only turns a hang into a failure.
function bounded(promise, what) {
	return boundedFor(BOUND_MS, promise, what);
}
function boundedFor(ms, promise, what) {
	let timer;
	const limit = new Promise((_, reject) => {
		timer = setTimeout(() => reject(new Error(`no ${what} within ${ms / 1000} s`)), ms);
	});
	return Promise.race([promise, limit]).finally(() => clearTimeout(timer));
}

// Resolves with the first event for which pick(msg) returns a value other than undefined.
function waitEvent(cdp, pick) {
	return new Promise((resolve, reject) => {
		const off = cdp.on(msg => {
			if (msg.method === 'jitt.exited') { off(); reject(msg.error); return; }
			const v = pick(msg);
			if (v !== undefined) { off(); resolve(v); }
		});
	});
}

// ---- the app and the export on 127.0.0.1 ----
const TYPES = { '.html': 'text/html', '.js': 'text/javascript', '.css': 'text/css',
	'.wasm': 'application/wasm', '.png': 'image/png', '.ico': 'image/x-icon',
	'.woff2': 'font/woff2', '.json': 'application/json' };

// Serves APP_DIR at / and the one export at /profile/<its name>: speedscope picks the
// importer partly by file name, so the name is kept. Nothing outside those two is served.
function serve(appDir, file) {
	const profilePath = '/profile/' + encodeURIComponent(path.basename(file));
	const missing = [];
	const server = http.createServer((req, res) => {
		const url = new URL(req.url, 'http://127.0.0.1');
		let target;
		if (url.pathname === profilePath) {
			target = file;
		} else {
			target = path.join(appDir, path.normalize(decodeURIComponent(url.pathname)));
			if (url.pathname === '/') target = path.join(appDir, 'index.html');
			if (!target.startsWith(appDir + path.sep)) target = null;
		}
		const stream = target && fs.createReadStream(target);
		const notFound = () => {
			missing.push(url.pathname);
			res.writeHead(404);
			res.end();
		};
		if (!stream) return notFound();
		stream.on('error', notFound);
		stream.on('open', () => {
			res.writeHead(200, { 'Content-Type': TYPES[path.extname(target)] ||
				'application/octet-stream' });
			stream.pipe(res);
		});
	});
	return new Promise((resolve, reject) => {
		server.on('error', reject);
		server.listen(0, '127.0.0.1', () => {
			const base = `http://127.0.0.1:${server.address().port}`;
			resolve({ server, missing, appUrl: `${base}/index.html`, fileUrl: base + profilePath });
		});
	});
}

// ---- one page ----
async function openPage(cdp) {
	const { targetId } = await cdp.send('Target.createTarget', { url: 'about:blank' });
	const { sessionId } = await cdp.send('Target.attachToTarget', { targetId, flatten: true });
	const page = (method, params) => cdp.send(method, params, sessionId);
	// A fixed viewport, so every screenshot has the same size.
	await page('Emulation.setDeviceMetricsOverride',
		{ width: 1600, height: 900, deviceScaleFactor: 1, mobile: false });
	return { sessionId, page };
}

// Chromium starts, answers, and gives a page WebGL: else the checks cannot run here, which
// is a reason to skip, not a failure of the export.
async function probe(cdp) {
	await bounded(cdp.send('Browser.getVersion'), 'answer from chromium');
	const { page } = await bounded(openPage(cdp), 'page');
	const r = await page('Runtime.evaluate', { expression:
		"!!document.createElement('canvas').getContext('webgl')", returnByValue: true });
	if (!r.result.value) throw new Error('no WebGL in headless chromium (speedscope draws with it)');
}

function text(args) {
	return (args || []).map(a => a.value !== undefined ? String(a.value)
		: a.unserializableValue || a.description || a.type).join(' ');
}

function one(s) {
	return s.length > 300 ? s.slice(0, 300) + '...' : s;
}

// A key typed as a person types it, through Chromium's input pipeline (speedscope's
// shortcuts listen on the window: "n" next profile, "2" Left Heavy, Ctrl+S Export, whose
// handler calls preventDefault, so the browser's own save-page never runs).
async function key(page, k, modifiers = 0) {
	const code = (/[0-9]/.test(k) ? 'Digit' : 'Key') + k.toUpperCase();
	const vk = k.toUpperCase().charCodeAt(0);
	const common = { key: k, code, windowsVirtualKeyCode: vk, modifiers };
	await page('Input.dispatchKeyEvent', { type: 'keyDown', text: modifiers ? undefined : k, ...common });
	await page('Input.dispatchKeyEvent', { type: 'keyUp', ...common });
}

// Two animation frames: the flame chart is drawn in one (speedscope redraws its WebGL
// canvas on requestAnimationFrame), and the second starts after that one is done.
function painted(page) {
	return page('Runtime.evaluate', { awaitPromise: true, expression:
		'new Promise(r => requestAnimationFrame(() => requestAnimationFrame(() => r(1))))' });
}

async function screenshot(page, out) {
	await painted(page);
	const { data } = await page('Page.captureScreenshot', { format: 'png' });
	fs.writeFileSync(out, Buffer.from(data, 'base64'));
}

// The profile speedscope loaded, as speedscope itself writes it out: its Export button
// (Ctrl+S) serialises the loaded profile group to its own JSON file format, frame names in
// shared.frames and each thread's profile as open/close events. Reading that download proves
// what the viewer holds, whichever importer it used, without reaching into its minified
// code or reading names off a canvas.
async function exportedProfile(cdp, page, dir) {
	await cdp.send('Browser.setDownloadBehavior',
		{ behavior: 'allowAndName', downloadPath: dir, eventsEnabled: true });
	const done = waitEvent(cdp, m => {
		if (m.method !== 'Browser.downloadProgress') return undefined;
		if (m.params.state === 'completed') return m.params.guid;
		if (m.params.state === 'canceled') return null;
		return undefined;
	});
	await key(page, 's', 2 /* Ctrl */);
	const guid = await bounded(done, "speedscope's export of the profile");
	if (guid === null) throw new Error("speedscope's export download was canceled");
	return JSON.parse(fs.readFileSync(path.join(dir, guid), 'utf8'));
}

// Where CULPRIT is in the exported group: the profile (thread) where it has the most time,
// and that time in the profile's unit. speedscope names a Chrome event's frame by its name,
// then a space and the event's args as JSON when it has args: both forms count.
function findCulprit(doc, culprit) {
	const ids = new Set();
	doc.shared.frames.forEach((f, i) => {
		if (f.name === culprit || f.name.startsWith(culprit + ' {')) ids.add(i);
	});
	let best = null;
	doc.profiles.forEach((p, index) => {
		const open = [];
		let time = 0, depth = 0;
		for (const e of p.events) {
			if (e.type === 'O') {
				open.push(e);
				if (ids.has(e.frame) && depth++ === 0) open[open.length - 1].outer = true;
			} else {
				const o = open.pop();
				if (o && ids.has(o.frame)) {
					depth--;
					if (o.outer) time += e.at - o.at; // recursion counted once
				}
			}
		}
		if (time > 0 && (!best || time > best.time))
			best = { index, time, name: p.name, unit: p.unit };
	});
	return { named: ids.size > 0, best };
}

// The import has ended when speedscope shows the profile view: loadProfile sets the title
// to "<name> - speedscope" once an importer succeeded, then the profile group, which
// renders the view tabs ("Time Order", ...). Asked every 100 ms; the page answers between
// its tasks, so a long import only delays the answer.
async function profileShown(page) {
	const expression = "document.title.endsWith(' - speedscope') && " +
		"document.body.innerText.includes('Time Order')";
	for (;;) {
		// An evaluation that meets the navigation ("context destroyed") is asked again.
		const r = await page('Runtime.evaluate', { expression, returnByValue: true })
			.catch(() => null);
		if (r && r.result.value === true) return;
		await new Promise(resolve => setTimeout(resolve, 100));
	}
}

async function check(cdp, appDir, file, culprit, outPrefix, tmp) {
	const results = [];
	const say = (what, good, msg) => {
		results.push(good);
		console.log(`${what} ${good ? 'ok' : 'fail'} ${msg}`);
	};
	const web = await serve(appDir, file);
	try {
		const { sessionId, page } = await openPage(cdp);
		// Every console message and page error from here on (navigation included, so the
		// whole import), and browser log entries (failed loads); the first few kept. At CAP
		// of them the verdict is known and the wait ends: speedscope 1.25 warns once per
		// unmatched E event (264,035 in a 32 MB hang trace), and with DevTools taking each
		// one the import had not ended after 120 s.
		const CAP = 100;
		const seen = { warnings: 0, first: [], importer: null, took: null };
		let flooded;
		const flood = new Promise(resolve => { flooded = resolve; });
		const bad = msg => {
			if (++seen.warnings <= 3) seen.first.push(one(msg));
			if (seen.warnings === CAP) flooded();
		};
		let fail;
		const failed = new Promise((_, reject) => { fail = reject; });
		failed.catch(() => {});
		cdp.on(m => {
			if (m.method === 'jitt.exited') return fail(m.error);
			if (m.sessionId !== sessionId) return;
			const p = m.params;
			if (m.method === 'Runtime.consoleAPICalled') {
				const t = text(p.args);
				if (p.type === 'warning' || p.type === 'error' || p.type === 'assert')
					bad(`console.${p.type}: ${t}`);
				// speedscope's loadProfile: console.time("import") ... timeEnd("import")
				// around the whole import, and console.log("Failed to load format") when an
				// importer throws. "Importing as ..." tells which importer it chose.
				else if (p.type === 'timeEnd' && /^import: /.test(t)) seen.took = t;
				else if (/^Failed to load format/.test(t)) fail(new Error(one(t)));
				else if (/^Importing /.test(t)) seen.importer = t;
			} else if (m.method === 'Runtime.exceptionThrown') {
				const d = p.exceptionDetails;
				bad(`page error: ${(d.exception && d.exception.description) || d.text}`);
			} else if (m.method === 'Log.entryAdded') {
				// Not "rendering": that is Chromium's software GL about itself ("GPU stall
				// due to ReadPixels" at speedscope's first draw), not about the profile.
				if ((p.entry.level === 'error' || p.entry.level === 'warning') &&
					p.entry.source !== 'rendering')
					bad(`${p.entry.level} (${p.entry.source}): ${p.entry.text}`);
			} else if (m.method === 'Page.javascriptDialogOpening') {
				// speedscope alerts "Unrecognized format!" and the like: a dialog blocks the
				// page until answered, so answer it and fail the import.
				page('Page.handleJavaScriptDialog', { accept: true }).catch(() => {});
				fail(new Error(`speedscope alert: ${p.message}`));
			} else if (m.method === 'Inspector.targetCrashed') {
				fail(new Error('the page crashed'));
			}
		});
		await page('Runtime.enable');
		await page('Log.enable');
		await page('Page.enable');
		const hash = `#profileURL=${encodeURIComponent(web.fileUrl)}&view=time-ordered`;
		const t0 = Date.now();
		await page('Page.navigate', { url: web.appUrl + hash });
		let why = null;
		try {
			const shown = profileShown(page).then(() => false);
			const many = flood.then(() => true);
			if (await boundedFor(IMPORT_MS, Promise.race([shown, many, failed]), 'profile view'))
				why = `stopped waiting at ${CAP} warnings or errors`;
		} catch (e) {
			why = `never finished importing: ${e.message}`;
		}
		if (why) {
			const also = seen.warnings ? `; ${seen.warnings} warnings, first: ${seen.first.join(' || ')}` : '';
			say('import', false, `${why}${also}`);
			console.log('note culprit and screenshot not checked: no profile view');
			return results;
		}
		const how = `${seen.importer || 'imported'} (${seen.took ? seen.took + ', ' : ''}` +
			`${Date.now() - t0} ms to the profile view)`;
		if (web.missing.length) bad(`served 404 for ${web.missing.join(' ')}`);
		// The importer speedscope chose, from its "Importing as ..." line: a .json file is
		// Chrome's trace-event format, a .folded file collapsed stacks; speedscope guesses
		// from the content, so a guess gone wrong would load something else.
		const want = /\.json$/.test(file) ? /Chrome|Trace Event Format/ : /collapsed stack/;
		if (!want.test(seen.importer || '')) bad(`speedscope read it as: ${seen.importer}`);
		if (seen.warnings === 0) {
			say('import', true, `${how}, no warning or error`);
		} else {
			say('import', false, `${seen.warnings} warnings or ` +
				`errors during the import (${how}); first: ${seen.first.join(' || ')}`);
		}

		let index = null;
		try {
			const doc = await exportedProfile(cdp, page, tmp);
			const { named, best } = findCulprit(doc, culprit);
			if (best) {
				index = best.index;
				say('culprit', true, `${culprit} in the loaded profile: ${best.time} ` +
					`${best.unit} in "${best.name}" (profile ${best.index + 1} of ${doc.profiles.length})`);
			} else {
				say('culprit', false, `${culprit} ${named ? 'is named but has no time in any'
					: 'is not in the'} loaded profile (${doc.shared.frames.length} frames, ` +
					`${doc.profiles.length} profiles)` + (fs.readFileSync(file, 'latin1')
					.includes(culprit) ? '; the file names it: a call with no time?' : ''));
			}
			// The screenshots show the culprit's thread: "n" steps to the next profile.
			const at = doc.activeProfileIndex || 0;
			for (let i = at; index !== null && i !== index; i = (i + 1) % doc.profiles.length)
				await key(page, 'n');
		} catch (e) {
			say('culprit', false, `could not read the loaded profile back: ${e.message}`);
		}

		// Time Order is speedscope's flame chart (calls in time order); Left Heavy merges
		// identical stacks. Key "2" is speedscope's shortcut for Left Heavy.
		const shots = [`${outPrefix}-time-order.png`, `${outPrefix}-left-heavy.png`];
		try {
			await bounded(screenshot(page, shots[0]), 'screenshot');
			await key(page, '2');
			await bounded(screenshot(page, shots[1]), 'screenshot');
			say('screenshot', true, shots.map(s => path.basename(s)).join(', '));
		} catch (e) {
			say('screenshot', false, e.message);
		}
		return results;
	} finally {
		web.server.close();
	}
}

async function main() {
	const argv = process.argv.slice(2);
	if (!(argv.length === 1 && argv[0] === 'probe') && argv.length !== 4) {
		console.error('usage: viewer-drive.js probe | APP_DIR FILE CULPRIT OUT_PREFIX');
		return 2;
	}
	const browser = process.env.CHROMIUM || '/usr/bin/chromium';
	try {
		fs.accessSync(browser, fs.constants.X_OK);
	} catch (e) {
		console.log(`skip chromium cannot start: no program ${browser}`);
		return SKIP;
	}
	const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'jitt-viewer-'));
	const child = startChromium(browser, path.join(tmp, 'profile'));
	const cdp = cdpClient(child);
	const spawnFailed = new Promise(resolve => child.on('error', e => resolve(e)));
	const exited = new Promise(resolve => child.on('exit', resolve));
	try {
		try {
			const err = await Promise.race([probe(cdp).then(() => null), spawnFailed]);
			if (err) throw err;
		} catch (e) {
			console.log(`skip chromium cannot start: ${one(e.message)}`);
			return SKIP;
		}
		if (argv[0] === 'probe') return 0;
		const downloads = path.join(tmp, 'downloads');
		fs.mkdirSync(downloads);
		const results = await check(cdp, path.resolve(argv[0]), path.resolve(argv[1]), argv[2],
			argv[3], downloads);
		return results.every(Boolean) ? 0 : 1;
	} finally {
		// Close politely, then make sure: our own process group only.
		if (child.exitCode === null && child.signalCode === null) {
			cdp.send('Browser.close').catch(() => {});
			const timer = setTimeout(() => {
				try { process.kill(-child.pid, 'SIGKILL'); } catch (e) { /* gone */ }
			}, 10000);
			await exited;
			clearTimeout(timer);
		}
		fs.rmSync(tmp, { recursive: true, force: true });
	}
}

main().then(code => process.exit(code), e => {
	console.log(`import fail driver error: ${e.stack || e}`);
	process.exit(1);
});
