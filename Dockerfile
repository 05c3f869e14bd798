# The server image used by docker-compose.yml. better-sqlite3 builds from source.
# It carries the compiled commands too:
#   docker compose exec -T server node dist/scripts/token.js alice     a token for alice
#   docker compose exec -T server node dist/scripts/seed.js --help     more data
FROM node:20-bookworm-slim AS build
RUN apt-get update && apt-get install -y --no-install-recommends python3 make g++ && rm -rf /var/lib/apt/lists/*
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci
COPY tsconfig.json tsconfig.build.json schema.graphql ./
COPY src ./src
RUN npm run build && npm prune --omit=dev

FROM node:20-bookworm-slim
WORKDIR /app
ENV NODE_ENV=production
COPY --from=build /app/node_modules ./node_modules
COPY --from=build /app/dist ./dist
COPY package.json schema.graphql ./
EXPOSE 4000
USER node
CMD ["node", "dist/main.js"]
