/**
 * Just enough Markdown for the docs tests: the text outside code, headings with the
 * anchors GitHub gives them, and relative links.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

export const ROOT = join(import.meta.dirname, '..', '..');

/** The guides the tests hold to their rules, relative to the project root. */
export function guideFiles(): string[] {
  const docs = readdirSync(join(ROOT, 'docs'))
    .filter((f) => f.endsWith('.md'))
    .sort()
    .map((f) => `docs/${f}`);
  return ['README.md', 'CONTRIBUTING.md', 'BENCHMARKS.md', ...docs];
}

export function readDoc(file: string): string {
  return readFileSync(join(ROOT, file), 'utf8');
}

/** One fenced code block: its info string (`sh`, `mermaid`, …) and its lines. */
export interface Fence {
  readonly info: string;
  readonly body: string;
}

/**
 * The lines outside fenced code blocks (fences opened by ``` or ~~~, closed by the same
 * marker at least as long), and the blocks themselves.
 */
export function splitFences(markdown: string): { prose: string[]; fences: Fence[] } {
  const prose: string[] = [];
  const fences: Fence[] = [];
  let open: { marker: string; info: string; lines: string[] } | undefined;
  for (const line of markdown.split('\n')) {
    const fence = /^ {0,3}(`{3,}|~{3,})\s*([^`\s]*)/.exec(line);
    if (open) {
      if (fence && fence[1]![0] === open.marker[0] && fence[1]!.length >= open.marker.length && fence[2] === '') {
        fences.push({ info: open.info, body: open.lines.join('\n') });
        open = undefined;
      } else open.lines.push(line);
    } else if (fence) open = { marker: fence[1]!, info: fence[2]!, lines: [] };
    else prose.push(line);
  }
  if (open) throw new Error(`unclosed code fence (${open.marker}${open.info})`);
  return { prose, fences };
}

/**
 * GitHub's anchor for a heading (github-slugger): lower case, inline markup and
 * punctuation dropped, each space a hyphen; a repeated slug gets -1, -2, ….
 */
export function slug(heading: string): string {
  return heading
    .replace(/!?\[([^\]]*)\]\([^)]*\)/g, '$1') // a link's text stays, its target goes
    .replace(/<[^>]+>/g, '')
    .toLowerCase()
    .replace(/[^\p{L}\p{M}\p{N}\p{Pc} -]/gu, '')
    .replace(/ /g, '-');
}

/** Every anchor a Markdown file offers: its headings' slugs, repeats numbered as GitHub does. */
export function anchorsOf(markdown: string): Set<string> {
  const seen = new Map<string, number>();
  const anchors = new Set<string>();
  for (const line of splitFences(markdown).prose) {
    const m = /^ {0,3}#{1,6}\s+(.*?)\s*#*\s*$/.exec(line);
    if (!m) continue;
    const base = slug(m[1]!);
    const n = seen.get(base) ?? 0;
    seen.set(base, n + 1);
    anchors.add(n === 0 ? base : `${base}-${n}`);
  }
  return anchors;
}

/** The targets of the links in a file's prose (inline code and code blocks left out). */
export function linkTargets(markdown: string): string[] {
  const prose = splitFences(markdown).prose.join('\n').replace(/(`+)[\s\S]*?\1/g, '');
  return [
    ...[...prose.matchAll(/!?\[(?:[^\]\\]|\\.)*\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)/g)].map((m) => m[1]!),
    ...[...prose.matchAll(/^ {0,3}\[[^\]]+\]:\s*<?(\S+?)>?(?:\s|$)/gm)].map((m) => m[1]!),
  ];
}
