/**
 * The guides render on GitHub as they are: every relative link in README.md,
 * CONTRIBUTING.md, BENCHMARKS.md and docs/*.md names a file that exists, every #anchor
 * a heading of its target (GitHub's slugs), every guide opens by saying whom it is for,
 * and every Mermaid block declares a diagram GitHub draws.
 */
import { existsSync, statSync } from 'node:fs';
import { dirname, join, normalize, relative } from 'node:path';
import { describe, expect, it } from 'vitest';
import { anchorsOf, guideFiles, linkTargets, readDoc, ROOT, slug, splitFences } from './markdown.js';

/** The links of `file` that lead nowhere, each as "file: target (why)". */
function brokenLinks(file: string): string[] {
  const broken: string[] = [];
  for (const target of linkTargets(readDoc(file))) {
    if (/^[a-z][a-z0-9+.-]*:/i.test(target)) continue; // https:, mailto:: not ours to check
    const hash = target.indexOf('#');
    const path = decodeURIComponent(hash === -1 ? target : target.slice(0, hash));
    const anchor = hash === -1 ? undefined : decodeURIComponent(target.slice(hash + 1));
    const resolved = path === '' ? file : relative(ROOT, normalize(join(ROOT, dirname(file), path)));
    if (resolved.startsWith('..') || !existsSync(join(ROOT, resolved))) {
      broken.push(`${file}: ${target} (no file ${resolved})`);
      continue;
    }
    if (anchor === undefined || anchor === '') continue;
    if (statSync(join(ROOT, resolved)).isDirectory() || !resolved.endsWith('.md')) {
      broken.push(`${file}: ${target} (an anchor into ${resolved}, which has no headings)`);
    } else if (!anchorsOf(readDoc(resolved)).has(anchor)) {
      broken.push(`${file}: ${target} (no heading of ${resolved} has the anchor #${anchor})`);
    }
  }
  return broken;
}

describe('the guides', () => {
  const files = guideFiles();

  it('are the landing page, CONTRIBUTING.md, BENCHMARKS.md and the five guides in docs/', () => {
    for (const guide of ['api', 'clients', 'operations', 'how-it-works', 'testing']) expect(files).toContain(`docs/${guide}.md`);
    for (const file of files) expect(existsSync(join(ROOT, file)), file).toBe(true);
  });

  it.each(guideFiles())('%s: every relative link and #anchor leads to a file and heading that exist', (file) => {
    expect(brokenLinks(file)).toEqual([]);
  });

  it('keeps the README a landing page of at most 150 lines that links to every guide', () => {
    const readme = readDoc('README.md');
    expect(readme.split('\n').length).toBeLessThanOrEqual(150);
    const targets = linkTargets(readme).map((t) => t.replace(/#.*/, ''));
    for (const file of files.filter((f) => f.startsWith('docs/'))) expect(targets).toContain(file);
  });

  it('keeps BENCHMARKS.md a page to read: at most 400 lines, the earlier rounds in the history it links to', () => {
    const benchmarks = readDoc('BENCHMARKS.md');
    expect(benchmarks.split('\n').length).toBeLessThanOrEqual(400);
    expect(linkTargets(benchmarks).map((t) => t.replace(/#.*/, ''))).toContain('docs/benchmarks-history.md');
  });

  it.each(guideFiles().filter((f) => f.startsWith('docs/')))('%s opens with its title and whom it is for', (file) => {
    const lines = readDoc(file).split('\n');
    expect(lines[0]).toMatch(/^# \S/);
    expect(lines.find((l, i) => i > 0 && l.trim() !== '')).toMatch(/^For /);
  });

  it('draws every Mermaid block as a diagram GitHub knows', () => {
    const blocks = files.flatMap((file) => splitFences(readDoc(file)).fences.filter((f) => f.info === 'mermaid').map((f) => ({ file, ...f })));
    expect(blocks.length).toBeGreaterThan(0);
    for (const block of blocks) {
      expect(block.body.trimStart(), block.file).toMatch(/^(flowchart (TD|TB|BT|LR|RL)|sequenceDiagram|stateDiagram-v2|classDiagram|erDiagram)\s/);
    }
  });
});

describe('the link checker', () => {
  it("gives headings GitHub's anchors", () => {
    expect(slug('Counts: `totalCount` without a scan')).toBe('counts-totalcount-without-a-scan');
    expect(slug('Live connections (subscriptions) in Apollo Client, Relay and urql')).toBe(
      'live-connections-subscriptions-in-apollo-client-relay-and-urql',
    );
    expect(slug('Paging: page size + 2')).toBe('paging-page-size--2');
    expect(slug('Stays fast as history grows (issue 15)')).toBe('stays-fast-as-history-grows-issue-15');
    expect([...anchorsOf('# A\n## Notes\n```sh\n# not a heading\n```\n## Notes\n')]).toEqual(['a', 'notes', 'notes-1']);
  });

  it('finds links outside code only', () => {
    const md = 'See [ops](docs/operations.md#logs) and [x][y].\n\n`[not](a-link.md)`\n\n```md\n[nor](this.md)\n```\n\n[y]: CONTRIBUTING.md\n';
    expect(linkTargets(md)).toEqual(['docs/operations.md#logs', 'CONTRIBUTING.md']);
  });
});
