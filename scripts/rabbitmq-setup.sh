#!/usr/bin/env bash
# RabbitMQ as the external broker (docs/rabbitmq.md), configured at run time with rabbitmqctl:
# no restart, nothing written to rabbitmq.conf (a restart forgets it; the doc says what to write
# there to keep it). Run as root (or the rabbitmq user) on a RabbitMQ node.
#
#   HOOK_URL=http://127.0.0.1:3000 MQTT_AUTH_SECRET=... scripts/rabbitmq-setup.sh enable
#   scripts/rabbitmq-setup.sh disable
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
set -euo pipefail

PLUGINS=(rabbitmq_mqtt rabbitmq_auth_backend_http rabbitmq_event_exchange rabbitmq_management)

erl() { rabbitmqctl -q eval "$1" >/dev/null; }

enable() {
  : "${HOOK_URL:?HOOK_URL: the service's base URL as RabbitMQ reaches it, e.g. http://127.0.0.1:3000}"
  : "${MQTT_AUTH_SECRET:?MQTT_AUTH_SECRET: the service's hook secret}"
  # httpc sends the URL's user-info as Basic auth, undecoded: keep the secret to URL-safe characters.
  if [[ ! "$MQTT_AUTH_SECRET" =~ ^[A-Za-z0-9._~-]+$ ]]; then
    echo "MQTT_AUTH_SECRET must be URL-safe (letters, digits, . _ ~ -) to travel in the hook URLs" >&2
    exit 2
  fi
  local host="${RABBITMQ_MQTT_HOST:-127.0.0.1}" port="${RABBITMQ_MQTT_PORT:-1884}"
  local base="${HOOK_URL%/}"
  base="${base/:\/\//://rabbitmq:${MQTT_AUTH_SECRET}@}/api/device/rabbitmq"
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

case "${1:-}" in
  enable) enable ;;
  disable) disable ;;
  *)
    echo "usage: HOOK_URL=... MQTT_AUTH_SECRET=... $0 enable | $0 disable" >&2
    exit 2
    ;;
esac
