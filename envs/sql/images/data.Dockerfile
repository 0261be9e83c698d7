# The data layer: every dump is loaded at build time, so a container starts with its data
# ready. load-dumps.sh names the dump and line of the first statement that fails.
ARG BASE
FROM ${BASE}
COPY load-dumps.sh /usr/local/lib/intercode/load-dumps.sh
COPY dumps/ /tmp/intercode-dumps/
RUN sh /usr/local/lib/intercode/load-dumps.sh /tmp/intercode-dumps && rm -rf /tmp/intercode-dumps
