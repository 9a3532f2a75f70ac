#!/usr/bin/env bash
# RabbitMQ as the external broker (docs/rabbitmq.md), configured at run time with rabbitmqctl:
# no restart, nothing written to rabbitmq.conf (a restart forgets it; the doc says what to write
# there to keep it). Run as root (or the rabbitmq user) on a RabbitMQ node.
#
#   HOOK_URL=http://127.0.0.1:3000 MQTT_AUTH_SECRET=... scripts/rabbitmq-setup.sh enable
#   scripts/rabbitmq-setup.sh disable
#   scripts/rabbitmq-setup.sh start
#   HOOK_URL=... MQTT_AUTH_SECRET=... scripts/rabbitmq-setup.sh node2 start
#   scripts/rabbitmq-setup.sh node2 stop
#
# enable:  the plugins (mqtt, auth_backend_http, event_exchange, management), the MQTT listener
#          on RABBITMQ_MQTT_HOST:RABBITMQ_MQTT_PORT (127.0.0.1:1884: Mosquitto may hold 1883),
#          no anonymous MQTT logins, and the auth chain: the internal users first (the service's
#          own account, and devices the service made internal users), our HTTP backend second
#          (devices not yet internal users: the service checks them and makes them users).
# disable: the internal users alone again, and the four plugins off.
# enable also says when the node's open-files limit is too low for a fleet: every device is a
# socket and a queue, and at the distribution's 1,024 a fleet of 1,000 exhausts it (RabbitMQ
# then refuses connections and loses Mnesia). A running node's limit cannot be raised from here
# (the Debian package starts it through su, whose PAM session sets 1,024; prlimit on it needs
# CAP_SYS_RESOURCE): docs/rabbitmq.md, "File descriptors", says how to start it with more.
# start:   starts this machine's node when it is not running, with the open-files limit node2
#          gets (below); a running node is left as it is, its limit said when too low.
# node2 start: a second node on this machine (rabbit2@<node 1's host>, its own AMQP, distribution,
#          MQTT and management ports), fresh, configured as enable configures node 1 but from its
#          own rabbitmq.conf (it boots with its plugins: set at run time, its MQTT listener would
#          first try 1883), started with as many open files as the hard limit allows (up to
#          RABBITMQ_NOFILE, 65,536), and joined to node 1's cluster. docs/rabbitmq.md, "Two nodes".
# node2 stop: node 2 leaves the cluster (or node 1 forgets it, when it is down already) and its
#          directory goes: node 1 is a single node again.
set -euo pipefail

PLUGINS=(rabbitmq_mqtt rabbitmq_auth_backend_http rabbitmq_event_exchange rabbitmq_management)

erl() { rabbitmqctl -q eval "$1" >/dev/null; }

# The hook's base URL with the secret as user-info (httpc sends it as Basic auth, undecoded: the
# secret is kept to URL-safe characters).
hook_base() {
  : "${HOOK_URL:?HOOK_URL: the service's base URL as RabbitMQ reaches it, e.g. http://127.0.0.1:3000}"
  : "${MQTT_AUTH_SECRET:?MQTT_AUTH_SECRET: the service's hook secret}"
  if [[ ! "$MQTT_AUTH_SECRET" =~ ^[A-Za-z0-9._~-]+$ ]]; then
    echo "MQTT_AUTH_SECRET must be URL-safe (letters, digits, . _ ~ -) to travel in the hook URLs" >&2
    exit 2
  fi
  local base="${HOOK_URL%/}"
  echo "${base/:\/\//://rabbitmq:${MQTT_AUTH_SECRET}@}/api/device/rabbitmq"
}

enable() {
  local base
  base="$(hook_base)"
  local host="${RABBITMQ_MQTT_HOST:-127.0.0.1}" port="${RABBITMQ_MQTT_PORT:-1884}"
  # The listener's address is read when the plugin starts: load it, set it, then enable. Set
  # before loading, the plugin's defaults would win (and 1883 fails beside Mosquitto).
  erl "_ = application:load(rabbitmq_mqtt), application:set_env(rabbitmq_mqtt, tcp_listeners, [{\"${host}\", ${port}}]), application:set_env(rabbitmq_mqtt, allow_anonymous, false)."
  rabbitmq-plugins -q enable "${PLUGINS[@]}" >/dev/null
  # POST: GET would put each device's secret in the request line, where access logs keep it.
  erl "_ = application:load(rabbitmq_auth_backend_http), [application:set_env(rabbitmq_auth_backend_http, K, \"${base}/\" ++ P) || {K, P} <- [{user_path, \"user\"}, {vhost_path, \"vhost\"}, {resource_path, \"resource\"}, {topic_path, \"topic\"}]], application:set_env(rabbitmq_auth_backend_http, http_method, post)."
  # Internal first: a device that is an internal user is decided by RabbitMQ alone (no HTTP call).
  erl "application:set_env(rabbit, auth_backends, [rabbit_auth_backend_internal, rabbit_auth_backend_http])."
  warn_files
  echo "RabbitMQ: MQTT on ${host}:${port}, auth chain internal then http (${HOOK_URL%/}/api/device/rabbitmq/*)"
}

files_limit() { rabbitmqctl -q eval 'file_handle_cache:ulimit().' 2>/dev/null | tr -d '[:space:]'; }

warn_files() {
  local limit
  limit="$(files_limit || true)"
  if [[ "$limit" =~ ^[0-9]+$ ]] && ((limit < 65536)); then
    echo "RabbitMQ may open ${limit} files: enough for about $(((limit - 1000) / 2)) devices; start it with a higher limit (docs/rabbitmq.md, \"File descriptors\")" >&2
  fi
}

disable() {
  erl "application:set_env(rabbit, auth_backends, [rabbit_auth_backend_internal])."
  rabbitmq-plugins -q disable "${PLUGINS[@]}" >/dev/null
  echo "RabbitMQ: internal users only, plugins ${PLUGINS[*]} disabled"
}

# --- node 2 -------------------------------------------------------------------------------------

node1() { rabbitmqctl -q eval 'node().' | tr -d "'[:space:]"; }
NODE2_AMQP_PORT="${RABBITMQ_NODE2_AMQP_PORT:-5673}"
NODE2_DIST_PORT="${RABBITMQ_NODE2_DIST_PORT:-25673}"
NODE2_MQTT_PORT="${RABBITMQ_NODE2_MQTT_PORT:-1885}"
NODE2_MANAGEMENT_PORT="${RABBITMQ_NODE2_MANAGEMENT_PORT:-15673}"
NODE2_DIR="${RABBITMQ_NODE2_DIR:-/var/lib/rabbitmq/node2}"
# Fits the fleet (docs/rabbitmq.md, "File descriptors"); RabbitMQ's production guidance.
NOFILE="${RABBITMQ_NOFILE:-65536}"
POLICY=dps-mqtt-sessions-mirrored

ctl2() { rabbitmqctl -n "$NODE2" "$@"; }
running2() { ctl2 -q eval 'ok.' >/dev/null 2>&1; }
# Node 1's view: is node 2 still a member of its cluster?
member2() { rabbitmqctl -q eval "lists:member('${NODE2}', rabbit_mnesia:cluster_nodes(all))." 2>/dev/null | grep -q true; }

# As the rabbitmq user (whose home holds the Erlang cookie node 1 uses), with RABBITMQ_* kept: su
# without a login keeps the environment. su's PAM session sets the soft open-files limit back to
# 1,024, so it is raised inside, up to the hard limit it leaves.
as_rabbitmq() {
  if [[ "$(id -u)" == "$(id -u rabbitmq)" ]]; then
    bash -c "$1"
  else
    su rabbitmq -s /bin/bash -c "$1"
  fi
}

node1_start() {
  if rabbitmqctl -q eval 'ok.' >/dev/null 2>&1; then
    echo "RabbitMQ: $(node1) is running already; it may open $(files_limit) files"
    warn_files
    return
  fi
  # The distribution's wrapper would start it through su with 1,024: its steps without that.
  as_rabbitmq "
    cd /var/lib/rabbitmq
    ulimit -n $NOFILE 2>/dev/null || ulimit -n \$(ulimit -Hn)
    /usr/lib/rabbitmq/bin/rabbitmq-server -detached
  "
  local i
  for ((i = 0; i < 60; i++)); do
    rabbitmqctl -q await_startup --timeout 60 >/dev/null 2>&1 && break
    sleep 2
  done
  if ((i == 60)); then
    echo "RabbitMQ did not start within 2 minutes: see /var/log/rabbitmq" >&2
    exit 1
  fi
  echo "RabbitMQ: $(node1) started; it may open $(files_limit) files"
  warn_files
}

node2_start() {
  local base
  base="$(hook_base)"
  NODE2="${RABBITMQ_NODE2_NAME:-rabbit2@$(node1 | cut -d@ -f2)}"
  # A node 2 left from before (another hook URL, another run) goes first: started fresh, joined fresh.
  node2_stop >/dev/null
  install -d -o rabbitmq -g rabbitmq -m 700 "$NODE2_DIR" "$NODE2_DIR/mnesia" "$NODE2_DIR/log"
  # Its own file: node 1's rabbitmq.conf binds 5672. The secret is in it: rabbitmq's alone.
  install -o rabbitmq -g rabbitmq -m 600 /dev/stdin "$NODE2_DIR/rabbitmq.conf" <<CONF
listeners.tcp.local = 127.0.0.1:${NODE2_AMQP_PORT}
mqtt.listeners.tcp.local = ${RABBITMQ_MQTT_HOST:-127.0.0.1}:${NODE2_MQTT_PORT}
mqtt.allow_anonymous = false
management.tcp.ip = 127.0.0.1
management.tcp.port = ${NODE2_MANAGEMENT_PORT}
auth_backends.1 = internal
auth_backends.2 = http
auth_http.http_method = post
auth_http.user_path = ${base}/user
auth_http.vhost_path = ${base}/vhost
auth_http.resource_path = ${base}/resource
auth_http.topic_path = ${base}/topic
cluster_formation.peer_discovery_backend = classic_config
cluster_formation.classic_config.nodes.1 = $(node1)
CONF
  install -o rabbitmq -g rabbitmq -m 600 /dev/stdin "$NODE2_DIR/enabled_plugins" <<<"[$(IFS=,; echo "${PLUGINS[*]}")]."
  as_rabbitmq "
    cd '$NODE2_DIR'
    ulimit -n $NOFILE 2>/dev/null || ulimit -n \$(ulimit -Hn)
    export RABBITMQ_NODENAME='$NODE2' RABBITMQ_NODE_PORT=$NODE2_AMQP_PORT RABBITMQ_DIST_PORT=$NODE2_DIST_PORT
    export RABBITMQ_CONFIG_FILE='$NODE2_DIR/rabbitmq.conf' RABBITMQ_ENABLED_PLUGINS_FILE='$NODE2_DIR/enabled_plugins'
    export RABBITMQ_MNESIA_BASE='$NODE2_DIR/mnesia' RABBITMQ_LOG_BASE='$NODE2_DIR/log' RABBITMQ_PID_FILE='$NODE2_DIR/node.pid'
    /usr/lib/rabbitmq/bin/rabbitmq-server -detached
  "
  ctl2 -q wait --timeout 60 "$NODE2_DIR/node.pid" >/dev/null
  # A device's persistent session is a classic queue on the node it first subscribed on: with
  # that node down its SUBSCRIBE fails (the connection is closed) until the node is back. Mirrored
  # to both nodes it moves with the device. Quorum queues cannot: two nodes lose their majority
  # with one down. docs/decisions.md, "Two RabbitMQ nodes: mirrored MQTT session queues".
  rabbitmqctl -q set_policy --apply-to queues --priority 10 "$POLICY" '^mqtt-subscription-' \
    '{"ha-mode":"all","ha-sync-mode":"automatic","ha-promote-on-shutdown":"always","ha-promote-on-failure":"always"}' >/dev/null
  local limit
  limit="$(ctl2 -q eval 'file_handle_cache:ulimit().' | tr -d '[:space:]')"
  echo "RabbitMQ node 2: ${NODE2} joined $(node1); AMQP 127.0.0.1:${NODE2_AMQP_PORT}, distribution ${NODE2_DIST_PORT}, MQTT ${RABBITMQ_MQTT_HOST:-127.0.0.1}:${NODE2_MQTT_PORT}, management 127.0.0.1:${NODE2_MANAGEMENT_PORT}; open files ${limit}"
  if ((limit < NOFILE)); then
    echo "RabbitMQ node 2 may open ${limit} files, not ${NOFILE} (the hard limit here): enough for about $(((limit - 1000) / 2)) devices; raise the hard limit (ulimit -Hn, limits.conf) for more" >&2
  fi
}

node2_stop() {
  NODE2="${RABBITMQ_NODE2_NAME:-rabbit2@$(node1 | cut -d@ -f2)}"
  # Stopped, then forgotten by node 1 (rather than reset, which leaves the cluster from node 2's
  # side and takes a restart of its apps): its directory goes anyway. Mirrored queues it led move
  # to node 1 as it stops.
  if running2; then ctl2 -q stop "$NODE2_DIR/node.pid" >/dev/null 2>&1 || ctl2 -q stop >/dev/null 2>&1 || true; fi
  if member2; then
    # The MQTT plugin's client-id tracking is a Raft cluster of the nodes that ran the plugin,
    # which RabbitMQ says needs a majority: it stops counting a node that will not come back.
    rabbitmqctl -q decommission_mqtt_node "$NODE2" >/dev/null 2>&1 || true
    rabbitmqctl -q forget_cluster_node "$NODE2" >/dev/null
  fi
  rabbitmqctl -q clear_policy "$POLICY" >/dev/null 2>&1 || true
  rm -rf "$NODE2_DIR"
  echo "RabbitMQ node 2: ${NODE2} stopped and out of the cluster"
}

case "${1:-} ${2:-}" in
  "enable "*) enable ;;
  "disable "*) disable ;;
  "start "*) node1_start ;;
  "node2 start") node2_start ;;
  "node2 stop") node2_stop ;;
  *)
    echo "usage: HOOK_URL=... MQTT_AUTH_SECRET=... $0 enable | $0 disable | $0 start | HOOK_URL=... MQTT_AUTH_SECRET=... $0 node2 start | $0 node2 stop" >&2
    exit 2
    ;;
esac
