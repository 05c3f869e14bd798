/**
 * A TCP proxy to a Cassandra node, for tests that put faults between a server and its
 * cluster: stopped (every connection cut, the port refused) and started again on its
 * port; or holding one statement's request, or its answer, for a while.
 *
 * A hold reads the native protocol's frames (version 4, what cassandra-driver speaks to
 * Apache Cassandra: a 9-byte header, `version flags stream:int16 opcode length:int32`,
 * then the body; no compression): the first BATCH request whose body holds a marker (a
 * bound value, such as a post's content) is picked, and either that request is held
 * before it reaches the node (it lands late), or it goes through and the node's answer to
 * its stream is held (the write is applied, its acknowledgement is late). Every other
 * frame passes at once, as the protocol allows: streams are independent.
 */
import { connect, createServer, type AddressInfo, type Server, type Socket } from 'node:net';

/** Which side of one statement a hold delays. */
export type HoldMode = 'request' | 'answer';

/** One hold: the BATCH request whose body contains `marker`, delayed `ms`. */
export interface Hold {
  readonly mode: HoldMode;
  readonly marker: string;
  readonly ms: number;
}

/** What became of a hold: when its frame was caught, and when it was let through. */
export interface HoldRecord {
  readonly hold: Hold;
  caughtAt: number | null;
  releasedAt: number | null;
}

const HEADER_BYTES = 9;
const OPCODE_BATCH = 0x0d;

/** Splits a byte stream into native-protocol frames (v3 and above: 9-byte headers). */
class FrameReader {
  private buffered: Buffer = Buffer.alloc(0);

  /** The whole frames `chunk` completes, in order. */
  push(chunk: Buffer): Buffer[] {
    this.buffered = this.buffered.length === 0 ? chunk : Buffer.concat([this.buffered, chunk]);
    const frames: Buffer[] = [];
    while (this.buffered.length >= HEADER_BYTES) {
      const length = HEADER_BYTES + this.buffered.readInt32BE(5);
      if (this.buffered.length < length) break;
      frames.push(this.buffered.subarray(0, length));
      this.buffered = this.buffered.subarray(length);
    }
    return frames;
  }
}

/** A TCP proxy to `host:targetPort` on a loopback port of its own. */
export class TcpProxy {
  private server: Server | null = null;
  private readonly sockets = new Set<Socket>();
  private readonly holds: HoldRecord[] = [];
  port = 0;

  constructor(
    private readonly host: string,
    private readonly targetPort: number,
  ) {}

  /** Where clients connect: `127.0.0.1:port`. */
  get address(): string {
    return `127.0.0.1:${this.port}`;
  }

  async start(): Promise<void> {
    const server = createServer((client) => this.relay(client));
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(this.port, '127.0.0.1', () => resolve());
    });
    this.port = (server.address() as AddressInfo).port;
    this.server = server;
  }

  async stop(): Promise<void> {
    const server = this.server;
    this.server = null;
    for (const s of this.sockets) s.destroy();
    if (server) await new Promise<void>((resolve) => server.close(() => resolve()));
  }

  /**
   * Hold the next BATCH request carrying `hold.marker` (or its answer) for `hold.ms`; the
   * record says when it was caught and let through.
   */
  hold(hold: Hold): HoldRecord {
    const record: HoldRecord = { hold, caughtAt: null, releasedAt: null };
    this.holds.push(record);
    return record;
  }

  private relay(client: Socket): void {
    const upstream = connect(this.targetPort, this.host);
    for (const s of [client, upstream]) {
      this.sockets.add(s);
      s.on('close', () => this.sockets.delete(s));
      s.on('error', () => undefined);
    }
    client.on('close', () => upstream.destroy());
    upstream.on('close', () => client.destroy());
    /** Streams of this connection whose answer is held, and for how long. */
    const heldAnswers = new Map<number, HoldRecord>();
    const requests = new FrameReader();
    const answers = new FrameReader();
    const later = (record: HoldRecord, to: Socket, frame: Buffer) => {
      record.caughtAt = Date.now();
      setTimeout(() => {
        record.releasedAt = Date.now();
        if (!to.destroyed) to.write(frame);
      }, record.hold.ms);
    };
    client.on('data', (chunk: Buffer) => {
      for (const frame of requests.push(chunk)) {
        const record = frame[4] === OPCODE_BATCH ? this.holds.find((h) => h.caughtAt === null && frame.includes(h.hold.marker, HEADER_BYTES)) : undefined;
        if (record?.hold.mode === 'request') {
          later(record, upstream, frame);
          continue;
        }
        if (record) {
          record.caughtAt = Date.now();
          heldAnswers.set(frame.readInt16BE(2), record);
        }
        upstream.write(frame);
      }
    });
    upstream.on('data', (chunk: Buffer) => {
      for (const frame of answers.push(chunk)) {
        const stream = frame.readInt16BE(2);
        const record = heldAnswers.get(stream);
        if (record) {
          heldAnswers.delete(stream);
          later(record, client, frame);
          continue;
        }
        client.write(frame);
      }
    });
  }
}
