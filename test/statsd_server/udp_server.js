// udp_server.js — statsd's own UDP server module (servers/udp.js) with a
// larger receive buffer, so that a burst of datagrams is not dropped by the
// kernel before the single-threaded server reads it. Loaded through the
// server's "servers" setting; everything else is the real statsd 0.9.0.
const dgram = require('dgram');

exports.start = function(config, callback) {
  const server = dgram.createSocket({
    type: config.address_ipv6 ? 'udp6' : 'udp4',
    recvBufferSize: config.recv_buffer_bytes || 4 * 1024 * 1024,
  }, callback);
  server.bind(config.port || 8125, config.address || undefined);
  this.server = server;
  return true;
};
