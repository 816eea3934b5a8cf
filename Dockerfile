# Two images from one build:
#   the agent (the default target): `forewarn agent`, run by the DaemonSet in deploy/kubernetes.
#     docker build -t forewarn-agent .
#     docker run --rm forewarn-agent --help
#   the emulator: `forewarn emulator`, IMDS on 8169 and the control API and dashboard on 8170.
#     docker build --target emulator -t forewarn-emulator .
#     docker run --rm -p 127.0.0.1:8169:8169 -p 127.0.0.1:8170:8170 forewarn-emulator

# Build: the TypeScript (and the @forewarn/client workspace it imports) into dist/.
FROM node:20-bookworm-slim AS build
WORKDIR /src
COPY package.json package-lock.json ./
COPY packages/client/package.json packages/client/
COPY deploy/agent-image/package.json deploy/agent-image/
# No install scripts: the root's `dependencies` script would run the build before the sources are copied.
RUN npm ci --ignore-scripts --no-audit --no-fund
COPY tsconfig.json tsconfig.build.json ./
COPY packages/client/tsconfig.json packages/client/
COPY scripts/build-dashboard.mjs scripts/
COPY src src
RUN npm run build

# The emulator: production dependencies without the optional peers (the agent's clients of
# Kubernetes, etcd and Azure are optionalDependencies of deploy/agent-image), and the build.
FROM node:20-bookworm-slim AS emulator
WORKDIR /app
COPY package.json package-lock.json ./
COPY packages/client/package.json packages/client/
COPY deploy/agent-image/package.json deploy/agent-image/
RUN npm ci --omit=dev --omit=optional --ignore-scripts --no-audit --no-fund && npm cache clean --force
COPY --from=build /src/dist dist
COPY --from=build /src/packages/client/dist packages/client/dist
COPY scenarios scenarios
COPY LICENSE ./
USER 1000:1000
EXPOSE 8169 8170
# tini is not needed: the emulator is one process and handles SIGTERM itself; --init adds one if wanted.
ENTRYPOINT ["node", "/app/dist/cli/main.js", "emulator"]
# Both servers on every interface inside the container, so `-p` can publish them. The control API
# answers a request without a token only when it is addressed to a loopback name (the host's
# 127.0.0.1:8170 is); set FOREWARN_TOKEN to drive it from elsewhere.
CMD ["--imds", "0.0.0.0:8169", "--control", "0.0.0.0:8170"]

# The agent: production dependencies with the optional peers, and the build, nothing else.
FROM node:20-bookworm-slim AS runtime
# tini as PID 1 forwards SIGTERM to the agent and reaps what exec actions leave behind.
RUN apt-get update \
  && apt-get install -y --no-install-recommends tini \
  && rm -rf /var/lib/apt/lists/*
WORKDIR /app
COPY package.json package-lock.json ./
COPY packages/client/package.json packages/client/
COPY deploy/agent-image/package.json deploy/agent-image/
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
