import { gif, jpeg, png, webp } from './media-samples.js';
import { startRemoteServer, type RemoteServer } from './remote-server.js';

export const SVG_LOGO =
  '<svg xmlns="http://www.w3.org/2000/svg" width="72" height="72"><script>alert(1)</script><rect width="72" height="72" fill="#0b5cad"/></svg>';

/**
 * An app developer's web server on loopback, hosting pictures good and bad. Every request is recorded,
 * so tests can tell whether a browser ever came here.
 */
export function startPictureHost(): Promise<RemoteServer> {
  return startRemoteServer((req, res) => {
    const path = new URL(req.url ?? '/', 'http://pictures').pathname;
    // The declared types are not believed either way: the bytes decide.
    if (path === '/logo.png') res.writeHead(200, { 'Content-Type': 'image/png' }).end(png());
    else if (path === '/logo.gif') res.writeHead(200, { 'Content-Type': 'application/octet-stream' }).end(gif());
    else if (path === '/logo.jpg') res.writeHead(200, { 'Content-Type': 'text/plain' }).end(jpeg());
    else if (path === '/logo.webp') res.end(webp());
    else if (path === '/logo.svg') res.writeHead(200, { 'Content-Type': 'image/svg+xml' }).end(SVG_LOGO);
    else if (path === '/not-an-image.png')
      res.writeHead(200, { 'Content-Type': 'image/png' }).end('<!doctype html><title>Hello</title>');
    else if (path === '/huge.png')
      res.writeHead(200, { 'Content-Type': 'image/png' }).end(Buffer.concat([png(), Buffer.alloc(1024 * 1024)]));
    else if (path === '/moved.png') res.writeHead(302, { Location: '/logo.png' }).end();
    else res.writeHead(404, { 'Content-Type': 'text/plain' }).end('not here');
  });
}
