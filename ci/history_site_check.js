// Checks the static history site ('canary-gate history site') in a real browser.
//   node ci/history_site_check.js --modules DIR/node_modules --chromium PATH --page FILE.html
//                                 --history history.jsonl --screenshot OUT.png
//
// What the page must show is worked out here from history.jsonl on its own, not from the page or
// the tool: per gate (a run without gate_id is gate ""), one chart per metric its runs have, one
// point per run that has the metric (the summary line is not a point), and the gate's accept
// events in every chart. Then Debian's chromium loads the page headless through puppeteer, with
// every request that is not file: or data: aborted (the page must need no network), and the DOM
// contract of the history site is checked: section.cg-gate[data-gate],
// svg.cg-chart[data-metric], circle.cg-point[data-commit] with a <title>, g.cg-accept with a
// <title>, table.cg-changes, no <script>. Any console error or warning, page error or failed
// request fails the check. A full-page screenshot is written to --screenshot.
//
// puppeteer-core (or puppeteer) is taken from --modules, default $CG_MERMAID_DIR/node_modules:
// the mermaid-cli installation of ci/mermaid, so no other package is installed. CommonJS, Node
// 18 or later. Prints one line per check ("ok: ..." or "FAIL: ..."); exit 0 when all passed, 1
// when one failed, 2 on bad usage or when puppeteer cannot be loaded.
'use strict';

const fs = require('fs');
const path = require('path');

const USAGE =
  'usage: node ci/history_site_check.js --modules DIR/node_modules --chromium PATH ' +
  '--page FILE.html --history history.jsonl --screenshot OUT.png';
const TIMEOUT_MS = 60000;

function usage(message) {
  process.stderr.write(`ci/history_site_check.js: ${message}\n${USAGE}\n`);
  process.exit(2);
}

function parseArgs(argv) {
  const opts = {};
  const known = ['--modules', '--chromium', '--page', '--history', '--screenshot'];
  for (let i = 0; i < argv.length; i += 2) {
    if (argv[i] === '-h' || argv[i] === '--help') {
      process.stdout.write(USAGE + '\n');
      process.exit(0);
    }
    if (!known.includes(argv[i])) usage(`unknown option '${argv[i]}'`);
    if (i + 1 >= argv.length) usage(`${argv[i]} needs a value`);
    opts[argv[i].slice(2)] = argv[i + 1];
  }
  if (!opts.modules && process.env.CG_MERMAID_DIR)
    opts.modules = path.join(process.env.CG_MERMAID_DIR, 'node_modules');
  for (const name of known) {
    if (!opts[name.slice(2)]) usage(`${name} is required`);
  }
  for (const name of ['page', 'history']) {
    if (!fs.existsSync(opts[name])) usage(`--${name} '${opts[name]}' not found`);
  }
  return opts;
}

function loadPuppeteer(modules) {
  for (const name of ['puppeteer-core', 'puppeteer']) {
    const dir = path.join(path.resolve(modules), name);
    if (fs.existsSync(dir)) return require(dir);
  }
  usage(`neither puppeteer-core nor puppeteer in '${modules}' (run ci/mermaid to install them)`);
  return null;
}

// What the page must show, from history.jsonl alone. Lines that are not JSON objects of schema 1
// are skipped. Returns {gates, skipped}: gates maps a gate id to {metrics: Map(name -> [commit of
// each run that has it]), accepts: [accept event]}; only gates with runs are listed.
function expectedFromHistory(file) {
  const entries = [];
  let skipped = 0;
  for (const line of fs.readFileSync(file, 'utf8').split('\n')) {
    if (line.trim() === '') continue;
    let entry = null;
    try {
      entry = JSON.parse(line);
    } catch (e) {
      entry = null;
    }
    if (entry === null || typeof entry !== 'object' || entry.schema !== 1) skipped++;
    else entries.push(entry);
  }
  const gateOf = entry => (typeof entry.gate_id === 'string' ? entry.gate_id : '');
  const gates = new Map();
  for (const entry of entries) {
    if (entry.type !== 'run' || !entry.metrics || typeof entry.metrics !== 'object') continue;
    const id = gateOf(entry);
    if (!gates.has(id)) gates.set(id, { metrics: new Map(), accepts: [] });
    const metrics = gates.get(id).metrics;
    for (const name of Object.keys(entry.metrics)) {
      if (!metrics.has(name)) metrics.set(name, []);
      metrics.get(name).push(String(entry.commit));
    }
  }
  for (const entry of entries) {
    if (entry.type === 'event' && entry.event === 'accept' && gates.has(gateOf(entry)))
      gates.get(gateOf(entry)).accepts.push(entry);
  }
  return { gates, skipped };
}

// The page's side of the contract, read in the browser.
function readPage() {
  const text = el => {
    const title = el.querySelector(':scope > title');
    return title ? title.textContent.trim() : null;
  };
  return {
    scripts: document.querySelectorAll('script').length,
    changeTables: document.querySelectorAll('table.cg-changes').length,
    gates: Array.from(document.querySelectorAll('section.cg-gate')).map(section => ({
      gate: section.getAttribute('data-gate'),
      charts: Array.from(section.querySelectorAll('svg.cg-chart')).map(svg => ({
        metric: svg.getAttribute('data-metric'),
        points: Array.from(svg.querySelectorAll('circle.cg-point')).map(c => ({
          commit: c.getAttribute('data-commit'),
          title: text(c),
        })),
        accepts: Array.from(svg.querySelectorAll('g.cg-accept')).map(text),
      })),
    })),
  };
}

function sameMultiset(a, b) {
  if (a.length !== b.length) return false;
  const x = a.slice().sort();
  const y = b.slice().sort();
  return x.every((v, i) => v === y[i]);
}

// The values of a that b lacks, counting repeats: what a page shows too many of.
function surplus(a, b) {
  const rest = b.slice();
  return a.filter(v => {
    const i = rest.indexOf(v);
    if (i < 0) return true;
    rest.splice(i, 1);
    return false;
  });
}

async function main() {
  const opts = parseArgs(process.argv.slice(2));
  const puppeteer = loadPuppeteer(opts.modules);
  const { gates: expected, skipped } = expectedFromHistory(opts.history);
  let failed = 0;
  let passed = 0;
  const check = (ok, what) => {
    process.stdout.write(`${ok ? 'ok' : 'FAIL'}: ${what}\n`);
    if (ok) passed++;
    else failed++;
    return ok;
  };
  const show = id => JSON.stringify(id);
  if (skipped > 0) process.stdout.write(`note: ${skipped} history lines not read\n`);
  check(expected.size > 0, `the history has runs (${expected.size} gates)`);

  const problems = [];
  const browser = await puppeteer.launch({
    executablePath: opts.chromium,
    headless: true,
    args: ['--no-sandbox', '--disable-gpu'],
  });
  try {
    const page = await browser.newPage();
    await page.setViewport({ width: 1280, height: 800 });
    await page.setRequestInterception(true);
    page.on('request', req => {
      const url = req.url();
      if (url.startsWith('file:') || url.startsWith('data:')) {
        req.continue();
      } else {
        problems.push(`network request to ${url}`);
        req.abort();
      }
    });
    page.on('console', msg => {
      if (['error', 'warn', 'warning'].includes(msg.type()))
        problems.push(`console ${msg.type()}: ${msg.text()}`);
    });
    page.on('pageerror', err => problems.push(`page error: ${err.message}`));
    page.on('requestfailed', req => {
      const url = req.url();
      if (url.startsWith('file:') || url.startsWith('data:'))
        problems.push(`request failed: ${url} (${req.failure() ? req.failure().errorText : '?'})`);
    });
    const url = 'file://' + path.resolve(opts.page);
    const response = await page.goto(url, { waitUntil: 'load', timeout: 30000 });
    check(response === null || response.ok(), `loaded ${url}`);
    const dom = await page.evaluate(readPage);

    check(dom.scripts === 0, `no <script> on the page (${dom.scripts} found)`);
    check(dom.changeTables >= 1, `table.cg-changes present (${dom.changeTables})`);
    const pageGates = dom.gates.map(g => g.gate);
    check(
      sameMultiset(pageGates, Array.from(expected.keys())),
      `one section.cg-gate per gate: page ${show(pageGates)}, history ${show(Array.from(expected.keys()))}`
    );
    for (const [id, want] of expected) {
      const section = dom.gates.find(g => g.gate === id);
      if (!section) continue;
      const metrics = section.charts.map(c => c.metric);
      const wantMetrics = Array.from(want.metrics.keys());
      check(
        sameMultiset(metrics, wantMetrics),
        `gate ${show(id)}: one svg.cg-chart per metric: page ${show(metrics.slice().sort())}, ` +
          `history ${show(wantMetrics.slice().sort())}`
      );
      for (const chart of section.charts) {
        const commits = want.metrics.get(chart.metric);
        if (!commits) continue;
        const where = `gate ${show(id)}, ${chart.metric}`;
        check(
          chart.points.length === commits.length,
          `${where}: ${chart.points.length} circle.cg-point for ${commits.length} runs`
        );
        const shown = chart.points.map(p => p.commit);
        const extra = surplus(shown, commits);
        const missing = surplus(commits, shown);
        check(
          extra.length === 0 && missing.length === 0,
          `${where}: the points' data-commit are the runs' commits` +
            (extra.length ? `; not runs: ${show(extra)}` : '') +
            (missing.length ? `; runs without a point: ${show(missing)}` : '')
        );
        const untitled = chart.points.filter(p => !p.title).length;
        check(untitled === 0, `${where}: every point has a <title> (${untitled} without)`);
        check(
          chart.accepts.length === want.accepts.length,
          `${where}: ${chart.accepts.length} g.cg-accept for ${want.accepts.length} accept events`
        );
        const unexplained = want.accepts.filter(
          ev => !chart.accepts.some(t => t && t.includes(String(ev.reason))));
        check(
          unexplained.length === 0,
          `${where}: every accept's <title> gives its reason (${unexplained.length} without)`
        );
      }
    }

    await page.screenshot({ path: opts.screenshot, fullPage: true });
    const size = fs.existsSync(opts.screenshot) ? fs.statSync(opts.screenshot).size : 0;
    check(size > 0, `screenshot ${opts.screenshot} (${size} bytes)`);
  } finally {
    await browser.close();
  }
  for (const p of problems) check(false, p);
  if (problems.length === 0) check(true, 'no console error or warning, page error or network request');
  process.stdout.write(`${passed} checks passed, ${failed} failed\n`);
  return failed === 0 ? 0 : 1;
}

const watchdog = setTimeout(() => {
  process.stdout.write(`FAIL: not done after ${TIMEOUT_MS / 1000} s\n`);
  process.exit(1);
}, TIMEOUT_MS);
main().then(
  code => {
    clearTimeout(watchdog);
    process.exit(code);
  },
  err => {
    clearTimeout(watchdog);
    process.stdout.write(`FAIL: ${err && err.stack ? err.stack : err}\n`);
    process.exit(1);
  }
);
