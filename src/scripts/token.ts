/**
 * `npm run token -- <username> [--admin] [--expires 30d]`: print a development token
 * signed with AUTH_SECRET (or the development secret when it is unset).
 */
import { parseArgs } from 'node:util';
import { loadConfig } from '../config.js';
import { authKey, signToken } from '../graphql/auth.js';

const { values, positionals } = parseArgs({
  allowPositionals: true,
  options: { admin: { type: 'boolean', default: false }, expires: { type: 'string', default: '30d' } },
});
const username = positionals[0];
if (!username) {
  console.error('usage: npm run token -- <username> [--admin] [--expires 30d]');
  process.exit(2);
}
const config = loadConfig();
if (config.devSecrets.includes('AUTH_SECRET')) {
  console.error('note: AUTH_SECRET is unset; signing with the development secret');
}
console.log(await signToken(authKey(config.authSecret), username, { admin: values.admin, expiresIn: values.expires }));
