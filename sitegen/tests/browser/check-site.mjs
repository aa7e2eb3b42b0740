// Checks a built AgentRank site in Debian's headless Chromium, driven by playwright-core (which never
// downloads a browser: it is pointed at /usr/bin/chromium):
//
//   node check-site.mjs SITE_DIR OUT_DIR [--kinds home,board,cell,compare,attempt,server,task]
//
// The site is served over HTTP from this process under a sub-path. For each kind of page (the home page,
// a board of a ranked agent when there is one, a cell of that board, a compare page, and an attempt
// with a failing verifier node when there is one; with --kinds also a server and a task page, and the
// attempt diff), in light and dark mode (prefers-color-scheme
// emulation), in a 1280 × 800 and a 375 × 812 window:
//   - the page is no wider than its window: document.documentElement.scrollWidth ≤ innerWidth, as
//     the browser lays it out;
//   - every table marked to fit (the headline table, `.fit`) fits its box without scrolling, and so
//     does the first table of the pages in FIRST_TABLE_FITS, marked or not;
//   - on the home page, when it shows a band, the first ranked board's band 1 starts in the first
//     screen: the bounding boxes of its group row and its first server's row end above the window's
//     bottom edge (the whole band's box is reported as `band1`);
//   - axe-core finds no WCAG 2.0/2.1/2.2 A or AA violation;
//   - a full-page screenshot is written to OUT_DIR/<kind>-<width>-<scheme>.png.
// One browser and one page serve every check. Prints one JSON report on stdout; exits 1 when any
// check fails, 2 on bad arguments (a missing kind of page is a failure, not a skip).

import { createRequire } from 'node:module';
import { createServer } from 'node:http';
import { readFileSync, readdirSync, existsSync, statSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { join, resolve, extname, dirname } from 'node:path';
import { tmpdir } from 'node:os';
import { fileURLToPath } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));
const prefix = process.env.AGENTRANK_NPM_PREFIX || resolve(here, '../../../.cache/npm');
const require = createRequire(join(prefix, 'node_modules', 'index.js'));

function usage(msg) {
  process.stderr.write(`check-site: ${msg}\nusage: node check-site.mjs SITE_DIR OUT_DIR [--kinds home,board,cell,compare,attempt,server,task,diff]\n`);
  process.exit(2);
}

const args = process.argv.slice(2);
let kinds = ['home', 'board', 'cell', 'compare', 'attempt'];
const positional = [];
for (let i = 0; i < args.length; i++) {
  if (args[i] === '--kinds') {
    kinds = (args[++i] || '').split(',').filter(Boolean);
  } else {
    positional.push(args[i]);
  }
}
if (positional.length !== 2) usage('SITE_DIR and OUT_DIR are required');
const site = resolve(positional[0]);
const out = resolve(positional[1]);
if (!existsSync(join(site, 'index.html'))) usage(`${site} has no index.html: not a built site`);
for (const k of kinds) {
  if (!['home', 'board', 'cell', 'compare', 'attempt', 'server', 'task', 'diff'].includes(k)) usage(`unknown kind ${k}`);
}
mkdirSync(out, { recursive: true });

let playwright, axeSource;
try {
  playwright = require('playwright-core');
} catch (e) {
  usage(`playwright-core is not installed under ${prefix} (xtask/needs.toml [areas.site]): ${e.message}`);
}
try {
  axeSource = readFileSync(join(prefix, 'node_modules', 'axe-core', 'axe.min.js'), 'utf8');
} catch (e) {
  usage(`axe-core is not installed under ${prefix} (xtask/needs.toml [areas.site])`);
}

const BUILTIN = new Set(['reference', 'no-tools', 'stubbed-empty', 'random-args']);
// The windows every page is checked in: a laptop's first screen and a phone's.
const WINDOWS = [{ width: 1280, height: 800 }, { width: 375, height: 812 }];
// Pages whose first table must fit its box at every width, whether or not it is marked to.
const FIRST_TABLE_FITS = new Set(['home', 'board', 'attempt']);

function files(dir) {
  const p = join(site, dir);
  if (!existsSync(p)) return [];
  const outList = [];
  const walk = (d, rel) => {
    for (const name of readdirSync(d).sort()) {
      const full = join(d, name);
      const r = rel ? `${rel}/${name}` : name;
      if (statSync(full).isDirectory()) walk(full, r);
      else if (name.endsWith('.html')) outList.push(`${dir}/${r}`);
    }
  };
  walk(p, '');
  return outList;
}

// Pick one page of each kind.
function pick() {
  const chosen = {};
  const boards = files('board');
  // A board of a real agent, preferring one that ranks servers (a band heading) over one whose every
  // row is refused; its cell and compare pages come from the same board.
  const real = boards.filter((b) => !BUILTIN.has(b.split('/')[2].replace(/\.html$/, '')));
  const board = real.find((b) => readFileSync(join(site, b), 'utf8').includes('Band 1')) || real[0] || boards[0];
  chosen.home = 'index.html';
  let compares = files('compare');
  if (board) {
    chosen.board = board;
    const [, category, agentFile] = board.split('/');
    const agent = agentFile.replace(/\.html$/, '');
    const cells = files(`cell/${category}/${agent}`);
    chosen.cell = cells[0];
    const own = compares.filter((c) => c.startsWith(`compare/${category}/${agent}/`));
    if (own.length) compares = own;
  }
  chosen.compare = compares[0];
  chosen.server = files('server')[0];
  chosen.task = files('task')[0];
  chosen.diff = files('diff')[0];
  const attempts = files('attempt');
  chosen.attempt = attempts.find((a) => readFileSync(join(site, a), 'utf8').includes('class="failing-node"')) || attempts[0];
  return chosen;
}

const SUB = '/site/';
const TYPES = { '.html': 'text/html; charset=utf-8', '.css': 'text/css', '.json': 'application/json', '.svg': 'image/svg+xml' };
function serve() {
  return new Promise((ok) => {
    const server = createServer((req, res) => {
      const path = decodeURIComponent((req.url || '/').split('?')[0]);
      if (!path.startsWith(SUB) || path.split('/').includes('..')) {
        res.writeHead(404).end();
        return;
      }
      const file = join(site, path.slice(SUB.length));
      if (!existsSync(file) || !statSync(file).isFile()) {
        res.writeHead(404).end();
        return;
      }
      res.writeHead(200, { 'Content-Type': TYPES[extname(file)] || 'application/octet-stream' });
      res.end(readFileSync(file));
    });
    server.listen(0, '127.0.0.1', () => ok(server));
  });
}

const AXE_TAGS = ['wcag2a', 'wcag2aa', 'wcag21a', 'wcag21aa', 'wcag22aa'];

async function main() {
  const chosen = pick();
  const report = { site, checks: [], failures: [], screenshots: [] };
  for (const k of kinds) {
    if (!chosen[k]) report.failures.push(`no ${k} page in the site`);
  }
  const server = await serve();
  const base = `http://127.0.0.1:${server.address().port}${SUB}`;
  const profile = mkdtempSync(join(tmpdir(), 'agentrank-chromium-'));
  const context = await playwright.chromium.launchPersistentContext(profile, {
    executablePath: '/usr/bin/chromium',
    headless: true,
    args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync', '--hide-scrollbars'],
    viewport: WINDOWS[0],
    deviceScaleFactor: 1,
  });
  try {
    const page = context.pages()[0] || (await context.newPage());
    const consoleErrors = [];
    page.on('pageerror', (e) => consoleErrors.push(String(e)));
    for (const kind of kinds) {
      const rel = chosen[kind];
      if (!rel) continue;
      for (const scheme of ['light', 'dark']) {
        await page.emulateMedia({ colorScheme: scheme });
        for (const { width, height } of WINDOWS) {
          await page.setViewportSize({ width, height });
          const url = base + rel;
          const resp = await page.goto(url, { waitUntil: 'load' });
          const status = resp ? resp.status() : 0;
          const m = await page.evaluate(() => {
            const fits = [...document.querySelectorAll('table.headline, .fit table, table.home')].map((t) => {
              const box = t.closest('.scroll') || t.parentElement;
              return { scroll: box.scrollWidth, client: box.clientWidth, id: t.id || (t.querySelector('caption') || {}).id || t.className };
            });
            const boxOf = (t) => {
              const box = t.closest('.scroll') || t.parentElement;
              return { scroll: box.scrollWidth, client: box.clientWidth };
            };
            const first = document.querySelector('main table');
            // Band 1 of the first ranked board: the first group row that reads "Band 1", in its tbody.
            const group = [...document.querySelectorAll('main tr.group')].find((tr) => tr.textContent.trim() === 'Band 1');
            let band1 = null;
            if (group) {
              const rect = (e) => e.getBoundingClientRect();
              const member = group.nextElementSibling;
              band1 = {
                top: rect(group).top,
                groupBottom: rect(group).bottom,
                firstServerBottom: member ? rect(member).bottom : null,
                bottom: rect(group.parentElement).bottom,
              };
            }
            return {
              scrollWidth: document.documentElement.scrollWidth,
              innerWidth: window.innerWidth,
              innerHeight: window.innerHeight,
              scrollY: window.scrollY,
              firstTable: first ? boxOf(first) : null,
              showsBand: /\bBand 1\b/.test(document.querySelector('main').textContent),
              band1,
              title: document.title,
              dark: getComputedStyle(document.body).backgroundColor,
              fits,
            };
          });
          // The pages' Content-Security-Policy forbids every script: axe runs through the protocol.
          await page.evaluate(axeSource);
          const violations = await page.evaluate(async (tags) => {
            const r = await window.axe.run(document, { runOnly: { type: 'tag', values: tags } });
            return r.violations.map((v) => ({ id: v.id, impact: v.impact, help: v.help, nodes: v.nodes.slice(0, 3).map((n) => n.target.join(' ')) }));
          }, AXE_TAGS);
          const shot = join(out, `${kind}-${width}-${scheme}.png`);
          await page.screenshot({ path: shot, fullPage: true });
          report.screenshots.push(shot);
          const check = { kind, page: rel, scheme, width, height, status, title: m.title, scrollWidth: m.scrollWidth, innerWidth: m.innerWidth, innerHeight: m.innerHeight, fits: m.fits, firstTable: m.firstTable, band1: m.band1, axe: violations, background: m.dark };
          report.checks.push(check);
          const where = `${kind} ${rel} ${scheme} ${width}px`;
          if (status !== 200) report.failures.push(`${where}: HTTP ${status}`);
          if (m.innerWidth !== width) report.failures.push(`${where}: window is ${m.innerWidth}px, not ${width}px`);
          if (m.scrollWidth > m.innerWidth) report.failures.push(`${where}: page is ${m.scrollWidth}px wide in a ${m.innerWidth}px window`);
          for (const f of m.fits) {
            if (f.scroll > f.client) report.failures.push(`${where}: table ${f.id} needs ${f.scroll}px in ${f.client}px`);
          }
          if (FIRST_TABLE_FITS.has(kind) && m.firstTable && m.firstTable.scroll > m.firstTable.client) {
            report.failures.push(`${where}: the first table needs ${m.firstTable.scroll}px in ${m.firstTable.client}px`);
          }
          if (kind === 'home' && m.showsBand) {
            const b = m.band1;
            const end = b && Math.max(b.groupBottom, b.firstServerBottom ?? b.groupBottom);
            if (!b) report.failures.push(`${where}: the page shows a band but no group row reads "Band 1"`);
            else if (m.scrollY !== 0 || end > m.innerHeight) {
              report.failures.push(`${where}: band 1 of the first ranked board ends at ${Math.round(end)}px, below the first screen (${m.innerHeight}px)`);
            }
          }
          if (violations.length) report.failures.push(`${where}: axe: ${JSON.stringify(violations)}`);
          const darkBg = m.dark === 'rgb(18, 20, 23)';
          if (darkBg !== (scheme === 'dark')) report.failures.push(`${where}: background ${m.dark} does not follow the ${scheme} scheme`);
          if (!m.title.endsWith(' · AgentRank')) report.failures.push(`${where}: title ${JSON.stringify(m.title)}`);
        }
      }
    }
    if (consoleErrors.length) report.failures.push(`page errors: ${consoleErrors.join('; ')}`);
  } finally {
    await context.close();
    server.close();
    rmSync(profile, { recursive: true, force: true });
  }
  process.stdout.write(JSON.stringify(report, null, 1) + '\n');
  process.exit(report.failures.length ? 1 : 0);
}

main().catch((e) => {
  process.stderr.write(`check-site: ${e.stack || e}\n`);
  process.exit(3);
});
