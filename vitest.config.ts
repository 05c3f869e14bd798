import { createRequire } from 'node:module';
import { defineConfig } from 'vitest/config';

const require = createRequire(import.meta.url);

export default defineConfig({
  // graphql ships a CommonJS and an ESM build; Node loads the CommonJS one for every
  // package (graphql has no `exports` map), so tests must too, or schema objects from
  // two copies meet ("Cannot use GraphQLNonNull from another module or realm").
  resolve: { alias: [{ find: /^graphql$/, replacement: require.resolve('graphql') }] },
  test: {
    include: ['test/**/*.test.ts'],
    testTimeout: 30_000,
    hookTimeout: 180_000,
    reporters: ['verbose'],
    pool: 'forks',
    server: { deps: { inline: ['graphql-query-complexity'] } },
  },
});
