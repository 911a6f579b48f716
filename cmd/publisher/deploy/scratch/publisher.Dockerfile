# The publisher's image built with no registry: the image cmd/publisher/Dockerfile makes, from a
# static binary built on the host instead of in a Go image. The context holds publisher (built
# with CGO_ENABLED=0), the host's ca-certificates.crt and an empty data directory, as
# ../build-images.sh prepares them.
FROM scratch
# Webhook receivers' certificates are checked against these; time zones are in the binary.
COPY ca-certificates.crt /etc/ssl/certs/
COPY publisher /publisher
COPY --chown=65532:65532 data /data
USER 65532:65532
WORKDIR /data
EXPOSE 8080 8081
ENTRYPOINT ["/publisher"]
CMD ["serve", "--data-dir", "/data"]
