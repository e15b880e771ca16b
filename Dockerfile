# certmgr-notify: service, operator and emitter in one image.
FROM node:24-bookworm-slim AS deps
WORKDIR /app
COPY package.json package-lock.json ./
# the `node` devDependency only pins Node for npm scripts; the image already is Node 24
RUN npm ci --omit=dev --no-audit --no-fund

FROM node:24-bookworm-slim
ENV NODE_ENV=production
WORKDIR /app
COPY --from=deps /app/node_modules ./node_modules
COPY package.json ./
COPY bin ./bin
COPY src ./src
COPY crds ./crds
USER node
EXPOSE 8080
ENTRYPOINT ["node", "--disable-warning=ExperimentalWarning", "bin/certmgr-notify.js"]
CMD ["serve", "--store", "sqlite:/tmp/certmgr-notify/certmgr-notify.db", "--api-key-path", "/tmp/certmgr-notify/api-key"]
