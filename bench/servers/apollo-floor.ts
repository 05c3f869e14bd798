/**
 * Apollo's floor as a process (bench/floor.ts): `node .bench-build/apollo-floor.js
 * <responses.json> <port>`, configured from the environment as the application is. The
 * file holds the recorded responses, a JSON array of `RecordedResponse`.
 */
import { readFileSync } from 'node:fs';
import { loadConfig } from '../../src/config.js';
import { createLogger } from '../../src/observability/logger.js';
import { createFloor, type RecordedResponse } from '../floor.js';

const config = loadConfig();
const responses = JSON.parse(readFileSync(process.argv[2]!, 'utf8')) as RecordedResponse[];
const floor = await createFloor(config, responses, createLogger({ level: config.logLevel, production: config.production }));
const port = await floor.listen(Number(process.argv[3] ?? 0), '127.0.0.1');
console.log(`READY ${port}`);
// Exit on SIGTERM through process.exit, so --cpu-prof writes its profile.
process.on('SIGTERM', () => process.exit(0));
