# The Forewarn agent's image: `forewarn agent`, run by the DaemonSet in deploy/kubernetes.
#   docker build -t forewarn-agent .
#   docker run --rm forewarn-agent --help

# Build: the TypeScript (and the @forewarn/client workspace it imports) into dist/.
FROM node:20-bookworm-slim AS build
WORKDIR /src
COPY package.json package-lock.json ./
COPY packages/client/package.json packages/client/
# No install scripts: the root's `prepare` would run the build before the sources are copied.
RUN npm ci --ignore-scripts --no-audit --no-fund
COPY tsconfig.json tsconfig.build.json ./
COPY packages/client/tsconfig.json packages/client/
COPY scripts/build-dashboard.mjs scripts/
COPY src src
RUN npm run build

# Runtime: production dependencies and the build, nothing else.
FROM node:20-bookworm-slim AS runtime
# tini as PID 1 forwards SIGTERM to the agent and reaps what exec actions leave behind.
RUN apt-get update \
  && apt-get install -y --no-install-recommends tini \
  && rm -rf /var/lib/apt/lists/*
WORKDIR /app
COPY package.json package-lock.json ./
COPY packages/client/package.json packages/client/
RUN npm ci --omit=dev --ignore-scripts --no-audit --no-fund && npm cache clean --force
# The whole of dist: the CLI imports the emulator's modules too, and they find dist/dashboard and
# ../scenarios relative to themselves.
COPY --from=build /src/dist dist
COPY --from=build /src/packages/client/dist packages/client/dist
COPY scenarios scenarios
COPY LICENSE ./
# The image's `node` user, by number so the kubelet can check runAsNonRoot.
USER 1000:1000
ENTRYPOINT ["/usr/bin/tini", "--", "node", "/app/dist/cli/main.js", "agent"]
# deploy/kubernetes/daemonset.yaml mounts the ConfigMap's agent.yaml here.
CMD ["--config", "/etc/forewarn/agent.yaml"]
