/**
 * The server-rendered pages of /oauth2/authorize (docs/key-manager.md, "Authorization code with PKCE"):
 * sign-in, consent and error. Plain HTML forms with labels (usable with a keyboard alone), no script, no
 * third-party asset: the only stylesheet is /oauth2/authorize/style.css on this server, and the
 * Content-Security-Policy below forbids everything else, framing included (clickjacking).
 */
import type * as http from 'node:http';

export const STYLE_PATH = '/oauth2/authorize/style.css';

/** Headers of every page: no caching (the pages hold CSRF tokens), no framing, no script. */
export const PAGE_HEADERS: Readonly<Record<string, string>> = {
  'Content-Security-Policy': "default-src 'none'; style-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'",
  'X-Frame-Options': 'DENY',
  'X-Content-Type-Options': 'nosniff',
  'Referrer-Policy': 'no-referrer',
  'Cache-Control': 'no-store',
  Pragma: 'no-cache',
};

const STYLE = `body{font-family:system-ui,sans-serif;max-width:28rem;margin:3rem auto;padding:0 1rem;color:#1b1b1b}
h1{font-size:1.4rem}label{display:block;margin:.8rem 0 .2rem}input[type=text],input[type=password]{width:100%;padding:.5rem;box-sizing:border-box}
button{margin:1rem .5rem 0 0;padding:.5rem 1.2rem}.error{color:#a40000;font-weight:bold}ul{padding-left:1.2rem}
:focus{outline:3px solid #1a5fb4;outline-offset:2px}
`;

/**
 * Characters that would reorder or hide what a page shows: C0 and C1 controls but tab and line ends,
 * DEL, and the bidirectional formatting characters (Unicode UAX #9: LRM, RLM, ALM, embeddings and
 * overrides U+202A-U+202E, isolates U+2066-U+2069). A value holding one (stored before names refused
 * them) is shown with the character spelled out by its code point, as [U+202E].
 */
const HIDDEN = /[\u0000-\u0008\u000b\u000c\u000e-\u001f\u007f-\u009f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]/g;

export function escapeHtml(s: string): string {
  return s
    .replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`)
    .replace(HIDDEN, (c) => `[U+${(c.codePointAt(0) ?? 0).toString(16).toUpperCase().padStart(4, '0')}]`);
}

function page(title: string, body: string): string {
  return `<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${escapeHtml(title)}</title>
<link rel="stylesheet" href="${STYLE_PATH}">
</head>
<body>
<main>
<h1>${escapeHtml(title)}</h1>
${body}
</main>
</body>
</html>
`;
}

/** Hidden fields binding a POST to its pending authorization (the CSRF token is checked on POST). */
function hidden(authz: string, csrf: string): string {
  return `<input type="hidden" name="authz" value="${escapeHtml(authz)}">\n<input type="hidden" name="csrf" value="${escapeHtml(csrf)}">`;
}

export function signInPage(o: { clientName: string; authz: string; csrf: string; username?: string; error?: string }): string {
  const error = o.error !== undefined ? `<p class="error" role="alert">${escapeHtml(o.error)}</p>\n` : '';
  return page(
    'Sign in',
    `<p>Sign in to continue to <strong>${escapeHtml(o.clientName)}</strong>.</p>
${error}<form method="post" action="/oauth2/authorize">
${hidden(o.authz, o.csrf)}
<label for="username">Username</label>
<input type="text" id="username" name="username" autocomplete="username" required autofocus value="${escapeHtml(o.username ?? '')}">
<label for="password">Password</label>
<input type="password" id="password" name="password" autocomplete="current-password" required>
<button type="submit" name="action" value="login">Sign in</button>
</form>`,
  );
}

export function consentPage(o: { clientName: string; username: string; scopes: readonly string[]; authz: string; csrf: string }): string {
  const list =
    o.scopes.length > 0
      ? `<ul>\n${o.scopes.map((s) => `<li>${escapeHtml(s)}</li>`).join('\n')}\n</ul>`
      : '<p>No scope beyond the default.</p>';
  return page(
    'Allow access?',
    `<p>Signed in as <strong>${escapeHtml(o.username)}</strong>. <strong>${escapeHtml(o.clientName)}</strong> asks for:</p>
${list}
<form method="post" action="/oauth2/authorize">
${hidden(o.authz, o.csrf)}
<button type="submit" name="action" value="allow">Allow</button>
<button type="submit" name="action" value="deny">Deny</button>
</form>`,
  );
}

export function errorPage(title: string, message: string): string {
  return page(title, `<p class="error" role="alert">${escapeHtml(message)}</p>`);
}

export function sendPage(res: http.ServerResponse, status: number, html: string, headers: Record<string, string | string[]> = {}): void {
  res.writeHead(status, {
    'Content-Type': 'text/html; charset=utf-8',
    'Content-Length': Buffer.byteLength(html),
    ...PAGE_HEADERS,
    ...headers,
  });
  res.end(html);
}

/** A host the CSP source grammar takes as it is (CSP3 §2.3.1 host-source): a DNS name, IPv4, or bracketed IPv6. */
const CSP_ORIGIN = /^https?:\/\/(?:[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*|\[[0-9A-Fa-f:.]+\])(?::\d{1,5})?$/;

/**
 * The origin of a registered redirect URI as a CSP source, or undefined. form-action governs the redirects
 * that follow a form submission too (CSP3 §6.4.1), so the sign-in and consent forms, answered with a 302 to
 * the application's callback, need exactly that origin beside 'self'. Only http(s) origins whose host is
 * plain letters, digits, dots and hyphens (or a bracketed IPv6 address) are named: the WHATWG URL parser
 * keeps characters such as ';' in a host, which would end the directive. Other schemes (a native app's
 * private-use scheme, RFC 8252 §7.1) have an opaque origin and get nothing wider than 'self'.
 */
export function formActionSource(redirectUri: string): string | undefined {
  let origin: string;
  try {
    origin = new URL(redirectUri).origin;
  } catch {
    return undefined;
  }
  return CSP_ORIGIN.test(origin) ? origin : undefined;
}

/** Headers of a sign-in or consent page whose forms end in a redirect to `redirectUri` (formActionSource). */
export function formPageHeaders(redirectUri: string): Record<string, string> {
  const source = formActionSource(redirectUri);
  if (source === undefined) return {};
  return {
    'Content-Security-Policy': (PAGE_HEADERS['Content-Security-Policy'] as string).replace(
      "form-action 'self'",
      `form-action 'self' ${source}`,
    ),
  };
}

export function sendStyle(res: http.ServerResponse): void {
  res.writeHead(200, {
    'Content-Type': 'text/css; charset=utf-8',
    'Content-Length': Buffer.byteLength(STYLE),
    'Cache-Control': 'max-age=3600',
    'X-Content-Type-Options': 'nosniff',
  });
  res.end(STYLE);
}
