#!/usr/bin/env python3
"""Opens an ipu report page (report.html) in headless Chromium and checks what it shows.

usage: check_report.py CHROMIUM REPORT_HTML [--screenshot PNG]

Chromium loads the page from the file, runs its script and prints the resulting DOM
(--dump-dom); the check fails on any console message or uncaught error (the page's own error
collector fills #ipu-errors and sets the body's data-status to "error"). What the page shows is
checked against the data the page embeds, which tests/report/html_report.cpp checks against
the plan's usage of every tile at every step: the tile map's cells, the peak figure, the step
the map opens at, the layer table's rows, the comparison's rows. With --screenshot, a
1400x2400 screenshot of the page is written to PNG (a build artefact).
"""

import argparse
import html.parser
import json
import os
import pathlib
import subprocess
import sys
import tempfile

TIMEOUT_S = 120  # a generous bound on Chromium's start, load and render


class Page(html.parser.HTMLParser):
    """The elements the check reads from the dumped DOM."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.body = {}
        self.tiles = 0
        self.ids = {}          # id -> text of the element (its direct and nested text)
        self.open_ids = []     # stack of (tag, id) whose text is being collected
        self.rows = {}         # table id -> rows in its tbody
        self.table = []        # stack of table ids
        self.in_tbody = 0
        self.data = None
        self._data_text = None

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == 'body':
            self.body = a
        if tag == 'div' and 'tile' in (a.get('class') or '').split():
            self.tiles += 1
        if tag == 'table':
            self.table.append(a.get('id', ''))
            self.rows.setdefault(a.get('id', ''), 0)
        if tag == 'tbody':
            self.in_tbody += 1
        if tag == 'tr' and self.in_tbody and self.table:
            self.rows[self.table[-1]] += 1
        if tag == 'script' and a.get('id') == 'ipu-data':
            self._data_text = []
        if 'id' in a:
            self.ids.setdefault(a['id'], '')
            self.open_ids.append((tag, a['id']))

    def handle_endtag(self, tag):
        if tag == 'table' and self.table:
            self.table.pop()
        if tag == 'tbody':
            self.in_tbody -= 1
        if tag == 'script' and self._data_text is not None:
            self.data = json.loads(''.join(self._data_text))
            self._data_text = None
        if self.open_ids and self.open_ids[-1][0] == tag:
            self.open_ids.pop()

    def handle_data(self, data):
        if self._data_text is not None:
            self._data_text.append(data)
            return
        for _, ident in self.open_ids:
            self.ids[ident] += data


def chromium(binary, profile_dir, *args):
    command = [binary, '--headless', '--no-sandbox', '--disable-gpu', '--no-first-run', '--hide-scrollbars',
               '--user-data-dir=' + profile_dir, '--enable-logging=stderr', '--v=0', '--virtual-time-budget=10000', *args]
    return subprocess.run(command, capture_output=True, text=True, timeout=TIMEOUT_S, check=False)


def grouped(n):
    return f'{n:,}'


def main():
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('chromium')
    parser.add_argument('report')
    parser.add_argument('--screenshot')
    args = parser.parse_args()
    report = pathlib.Path(args.report).resolve()
    failures = []

    def check(ok, what):
        if not ok:
            failures.append(what)

    with tempfile.TemporaryDirectory(prefix='ipu-chromium-') as profile_dir:
        run = chromium(args.chromium, profile_dir, '--dump-dom', report.as_uri())
        if run.returncode != 0:
            print(run.stderr, file=sys.stderr)
            print(f'FAIL: chromium exited with status {run.returncode}', file=sys.stderr)
            return 1
        console = [line for line in run.stderr.splitlines() if ':CONSOLE' in line or 'Uncaught' in line]
        check(not console, 'console messages:\n  ' + '\n  '.join(console))
        page = Page()
        page.feed(run.stdout)

        check(page.body.get('data-status') == 'ok',
              f'the page did not draw (data-status {page.body.get("data-status")!r}): {page.ids.get("ipu-errors", "").strip()}')
        check(page.ids.get('ipu-errors', '').strip() == '', 'errors shown: ' + page.ids.get('ipu-errors', ''))
        check(page.data is not None, 'no ipu-data element')
        if page.data is not None and not failures:
            run0 = page.data['runs'][0]
            memory, profile = run0['memory'], run0['profile']
            if run0['kind'] == 'training':  # IPU 0's tiles over the steps of a training step
                peak, k, steps = memory['peak'], memory['peak_step'], memory['steps']
                label = steps[k]['phase'] + ' ' + memory['layers'][steps[k]['node']]['path']
            else:  # the IPU with the fullest tile, the first on a tie
                top = max(memory['ipu_reports'], key=lambda r: (r['peak'], -r['ipu']))
                peak, steps = top['peak'], top['steps']
                k = next(i for i, s in enumerate(steps) if s['node'] == top['peak_step'])
                label = memory['layers'][top['peak_step']]['path']
            check(page.tiles == memory['tiles'], f'{page.tiles} tile cells, not {memory["tiles"]}')
            check(page.ids.get('summary-peak') == grouped(peak) + ' B',
                  f'peak shown {page.ids.get("summary-peak")!r}, not {grouped(peak)} B')
            check(page.ids.get('summary-fits') == ('yes' if memory['fits'] else 'no'), 'fit shown wrongly')
            check(page.ids.get('step-info', '').startswith(f'Step {k + 1} of {len(steps)}: {label}'),
                  f'the map does not open at the peak step: {page.ids.get("step-info")!r}')
            check(page.rows.get('layer-table') == len(memory['layers']),
                  f'{page.rows.get("layer-table")} rows in the layer table, not {len(memory["layers"])}')
            check(page.ids.get('layer-count', '').startswith(f'{len(memory["layers"])} of {len(memory["layers"])} layers'),
                  f'layer count shown {page.ids.get("layer-count")!r}')
            check(len(profile['steps']) == len(memory['steps'] if run0['kind'] == 'training' else memory['layers']),
                  'the profile and the memory report differ in steps')
            if len(page.data['runs']) > 1:
                other = {l['path'] for l in page.data['runs'][1]['memory']['layers']}
                both = sum(1 for l in memory['layers'] if l['path'] in other)
                check(page.rows.get('compare-layers') == both,
                      f'{page.rows.get("compare-layers")} rows compared, not the {both} layers in both reports')
        print(f'{report}: {report.stat().st_size:,} bytes; drawn in {page.body.get("data-render-ms")} ms, '
              f'{page.body.get("data-load-ms")} ms after navigation started; {page.tiles} tile cells, '
              f'{page.rows.get("layer-table")} layer rows')

        if args.screenshot:
            shot = pathlib.Path(args.screenshot).resolve()
            shot.parent.mkdir(parents=True, exist_ok=True)
            run = chromium(args.chromium, profile_dir, '--window-size=1400,2400', '--screenshot=' + str(shot), report.as_uri())
            check(run.returncode == 0 and shot.exists() and shot.stat().st_size > 0, f'no screenshot at {shot}')
            if shot.exists():
                print(f'screenshot: {shot}')

    for f in failures:
        print('FAIL: ' + f, file=sys.stderr)
    return 1 if failures else 0


if __name__ == '__main__':
    sys.exit(main())
