/**
 * `npm run -s token -- <username> [--admin] [--expires 30d]` (or, in the image,
 * `node dist/scripts/token.js <username>`): print a token signed with AUTH_SECRET (or
 * the development secret when it is unset; never an earlier one of
 * AUTH_PREVIOUS_SECRETS), with AUTH_ISSUER, AUTH_AUDIENCE and AUTH_ROLES_CLAIM as the
 * server checks them, on stdout, alone, so it can be captured:
 * `TOKEN=$(npm run -s token -- alice)`.
 */
import { decodeJwt } from 'jose';
import { loadConfig } from '../config.js';
import { authKey, signToken } from '../graphql/auth.js';
import { parseCli, runScript, usageError } from './cli.js';

const USAGE = `usage: npm run -s token -- <username> [--admin] [--expires 30d]
       node dist/scripts/token.js <username> [--admin] [--expires 30d]

Prints a bearer token for <username>, signed with AUTH_SECRET (the development secret
when it is unset). --admin grants the admin role; --expires takes a duration such as
2h, 7d or 30d (default 30d). Send it as "Authorization: Bearer <token>".`;

const { values, positionals } = parseCli(
  USAGE,
  { admin: { type: 'boolean', default: false }, expires: { type: 'string', default: '30d' } },
  true,
);
const [username, ...extra] = positionals;
if (!username) usageError('a username is required', USAGE);
if (extra.length > 0) usageError(`one username only, got also "${extra.join(' ')}"`, USAGE);
if (!/^\d+\s*(s|m|h|d|w|y)$/.test(values.expires)) usageError(`--expires must be a duration such as 2h, 7d or 30d, got "${values.expires}"`, USAGE);

runScript('token', async () => {
  const config = loadConfig();
  const { auth } = config;
  if (auth.kind === 'identity-provider') {
    usageError('AUTH_JWKS_URL is set: the server accepts only tokens your identity provider signs, so this command cannot make one', USAGE);
  }
  if (config.devSecrets.includes('AUTH_SECRET')) {
    console.error('note: AUTH_SECRET is unset; signing with the development secret');
  }
  // Signed as the server checks it: with its issuer, its first audience and its roles claim.
  const token = await signToken(authKey(auth.secret), username, {
    admin: values.admin,
    expiresIn: values.expires,
    issuer: auth.issuer,
    audience: auth.audiences[0],
    rolesClaim: auth.rolesClaim,
  });
  // The server refuses a token that expires further ahead than MAX_TOKEN_AGE: do not print one.
  const ahead = decodeJwt(token).exp! - Math.floor(Date.now() / 1000);
  if (ahead > config.maxTokenAgeSeconds) {
    usageError(`--expires ${values.expires} is beyond MAX_TOKEN_AGE (${config.maxTokenAgeSeconds} s): the server would refuse this token`, USAGE);
  }
  console.log(token);
});
