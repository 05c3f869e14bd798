/**
 * Reading a V8 CPU profile (`--cpu-prof`, or the inspector's `Profiler.stop`): busy time
 * by area, inclusive (a sample counts once for every area on its stack), and self time
 * by function. Shared by bench/profile.ts (the HTTP server) and bench/profile-cassandra.ts.
 */

/** One node of a CPU profile's call tree. */
export interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  children?: number[];
}

/** A CPU profile as V8 writes it. */
export interface CpuProfile {
  nodes: ProfileNode[];
  samples: number[];
  timeDeltas: number[];
  startTime: number;
}

/** Named areas, first match wins for a frame. */
export type Areas = ReadonlyArray<readonly [string, (frame: ProfileNode['callFrame']) => boolean]>;

/**
 * Busy time (µs, idle left out) of the samples `counts` keeps (given each sample's
 * time on the profile's clock), by area and by function (`name url:line`).
 */
export function busyTime(profile: CpuProfile, areas: Areas, counts: (at: number) => boolean = () => true) {
  const parent = new Map<number, number>();
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  for (const n of profile.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
  const areaOfNode = new Map<number, Set<string>>();
  const areasOf = (id: number): Set<string> => {
    let set = areaOfNode.get(id);
    if (set) return set;
    const node = byId.get(id)!;
    set = new Set(parent.has(id) ? areasOf(parent.get(id)!) : []);
    const area = areas.find(([, test]) => test(node.callFrame));
    if (area) set.add(area[0]);
    areaOfNode.set(id, set);
    return set;
  };
  const byArea = new Map<string, number>();
  const bySelf = new Map<string, number>();
  let busy = 0;
  let at = profile.startTime;
  profile.samples.forEach((id, i) => {
    const dt = profile.timeDeltas[i] ?? 0;
    at += dt;
    if (!counts(at)) return;
    const frame = byId.get(id)!.callFrame;
    if (frame.functionName === '(idle)') return;
    busy += dt;
    for (const a of areasOf(id)) byArea.set(a, (byArea.get(a) ?? 0) + dt);
    const name = `${frame.functionName || '(anonymous)'} ${frame.url.replace(/^.*\/(node_modules|\.bench-build\/tree)\//, '')}:${frame.lineNumber + 1}`;
    bySelf.set(name, (bySelf.get(name) ?? 0) + dt);
  });
  return { busy, byArea, bySelf };
}
