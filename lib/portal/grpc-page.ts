/**
 * A gRPC API in the developer portal (docs/portal.md, "gRPC APIs"): its services and methods as its .proto
 * files declare them (lib/grpc/proto.ts), each with its call kind, message types and the gateway's rules of
 * its resource (authentication, scopes, throttling policy), in place of an OpenAPI view. The portal does
 * not call a gRPC method itself (a call is HTTP/2 with trailers, docs/grpc.md); the page says how to call
 * it with grpcurl or @grpc/grpc-js instead. Every value is HTML-escaped.
 */
import * as path from 'node:path';
import type { ApiDefinition, ResourceDefinition } from '../gateway/apis';
import type { CallKind } from '../grpc';
import { copyButton, escapeHtml as h } from './html';

const KIND_TEXT: Readonly<Record<CallKind, string>> = {
  unary: 'unary',
  server_streaming: 'server streaming',
  client_streaming: 'client streaming',
  bidi_streaming: 'bidirectional streaming',
};

/** The refusal of the try-it form for a gRPC API. */
export const GRPC_TRY_REFUSAL =
  'A gRPC API is not called from this page: a call is HTTP/2 with trailers (docs/grpc.md). Call it with grpcurl or @grpc/grpc-js as its API page shows.';

/** host:port of a gateway URL, and whether it is TLS; undefined: not a URL. */
function authority(url: string): { readonly host: string; readonly tls: boolean } | undefined {
  try {
    const u = new URL(url);
    return { host: u.host, tls: u.protocol === 'https:' };
  } catch {
    return undefined;
  }
}

function resourceOf(api: Pick<ApiDefinition, 'resources'>, p: string): ResourceDefinition | undefined {
  return api.resources.find((r) => r.path === p);
}

/** The API's services and methods; the methods its resources do not list are shown as refused (UNIMPLEMENTED). */
export function grpcMethodsHtml(
  api: Pick<ApiDefinition, 'grpc' | 'resources' | 'scopes' | 'policy'>,
  servers: readonly { readonly name: string; readonly url: string }[],
): string {
  const g = api.grpc;
  if (g === undefined) return '';
  const roles = new Map(api.scopes.map((s) => [s.name, s.roles]));
  const scopeText = (s: string): string => `${s}${(roles.get(s) ?? []).length > 0 ? ` (roles: ${(roles.get(s) ?? []).join(', ')})` : ''}`;
  const services = g.services
    .map((s) => {
      const rows = s.methods
        .map((m) => {
          const r = resourceOf(api, m.path);
          const rules =
            r === undefined
              ? '<td colspan="3">not served (UNIMPLEMENTED)</td>'
              : `<td>${h(r.auth === 'oauth2' ? 'OAuth 2.0 token' : 'none')}</td><td>${h(r.scopes.map(scopeText).join('; '))}</td><td>${h(r.policy ?? api.policy ?? '')}</td>`;
          return `<tr><td><code>${h(m.name)}</code></td><td>${h(KIND_TEXT[m.kind])}</td><td><code>${h(m.requestType)}</code></td><td><code>${h(m.responseType)}</code></td>${rules}</tr>`;
        })
        .join('\n');
      return `<h3>Service <code>${h(s.name)}</code></h3>
<div class="table"><table class="grpc-methods"><thead><tr><th scope="col">Method</th><th scope="col">Call kind</th><th scope="col">Request</th><th scope="col">Response</th><th scope="col">Authentication</th><th scope="col">Scopes</th><th scope="col">Policy</th></tr></thead>
<tbody>${rows}</tbody></table></div>`;
    })
    .join('\n');
  const count = g.services.reduce((n, s) => n + s.methods.length, 0);
  const first = g.services.find((s) => s.methods.length > 0)?.methods[0];
  const at = servers.map((s) => authority(s.url)).find((a) => a !== undefined);
  const protos = g.protoFiles.map((f) => path.basename(f));
  const target = at?.host ?? 'gateway-host:port';
  const call = first === undefined ? '' : `${first.service}/${first.name}`;
  return `<section aria-labelledby="grpc">
<h2 id="grpc">gRPC services</h2>
<p>${g.services.length} service${g.services.length === 1 ? '' : 's'}, ${count} method${count === 1 ? '' : 's'}, from ${protos.map((p) => `<code>${h(p)}</code>`).join(', ')}. Calls go to the gateway over HTTP/2${at !== undefined ? ` at <code>${h(target)}</code>` : ''}, with the path <code>/package.Service/Method</code>; the API's context is not part of it.</p>
${services}
<h3>How to call</h3>
<p>This page does not send gRPC calls (HTTP/2 with trailers). With the access token of an application subscribed to this API in the <code>authorization</code> metadata:</p>
<p>${copyButton('grpcurl', 'grpcurl command')}</p>
<pre id="grpcurl">grpcurl ${at?.tls === true ? '' : '-plaintext '}-proto ${h(protos[0] ?? 'service.proto')} -H 'authorization: Bearer $TOKEN' -d '{}' ${h(target)} ${h(call)}</pre>
<p>${copyButton('grpc-js', 'grpc-js sketch')}</p>
<pre id="grpc-js">const grpc = require('@grpc/grpc-js');
const creds = ${at?.tls === true ? 'grpc.credentials.createSsl()' : 'grpc.credentials.createInsecure()'};
const md = new grpc.Metadata(); md.set('authorization', 'Bearer ' + token);
// a client of the service loaded from ${h(protos[0] ?? 'service.proto')} with @grpc/proto-loader
new Client('${h(target)}', creds).${h(first?.name ?? 'Method')}(request, md, callback);</pre>
${at?.tls === true ? '' : '<p>Plain <code>http://</code> listeners take HTTP/2 only with <code>[throughway.http2] h2c = true</code> (docs/http2.md).</p>'}
</section>`;
}
