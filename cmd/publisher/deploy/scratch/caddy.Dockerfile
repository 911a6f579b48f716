# Caddy, the balancer, built with no registry: a static binary built on the host, laid out as the
# official image is (caddy on the PATH, its state in /data and /config), so that compose's
# command and volumes apply unchanged. The context holds caddy and empty data and config
# directories.
FROM scratch
COPY caddy /usr/bin/caddy
COPY data /data
COPY config /config
ENV PATH=/usr/bin XDG_DATA_HOME=/data XDG_CONFIG_HOME=/config
EXPOSE 8080
