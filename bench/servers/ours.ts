/** Our server (Apollo Server over node:http), for the overhead run. */
import pino from 'pino';
import { createApp } from '../../src/app.js';
import { benchConfig } from '../fixture.js';

const app = await createApp(benchConfig(process.argv[2]!), { logger: pino({ level: 'silent' }) });
const port = await app.listen(0, '127.0.0.1');
console.log(`READY ${port}`);
