# nats-server built with no registry: a static binary built on the host from the module version
# go.mod requires, the server the tests run. Compose passes the configuration (-c ...) as
# arguments, as it does to the official image.
FROM scratch
COPY nats-server /nats-server
EXPOSE 4222 6222 8222
ENTRYPOINT ["/nats-server"]
