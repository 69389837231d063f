/**
 * The consoles' page frame (docs/portal.md): server-rendered HTML, no script at all, no third-party
 * asset. The one stylesheet is served from this server; the Content-Security-Policy forbids every other
 * source, scripts included, and framing (clickjacking). Forms post only to this origin.
 */
import { createHash } from 'node:crypto';
import type * as http from 'node:http';
import { escapeHtml, PAGE_HEADERS as SIGNIN_HEADERS, sendPage } from '../keymanager/signin-page';

export { escapeHtml };

export const STYLE_PATH = '/devportal/style.css';
/** The consoles' icon (served beside the style sheet: without a <link rel="icon"> a browser asks for /favicon.ico, a 404). */
export const ICON_PATH = '/devportal/icon.svg';
const ICON =
  '<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 16 16"><rect width="16" height="16" rx="3" fill="#1f4f8f"/><path d="M3 5h10M8 5v8" stroke="#fff" stroke-width="2"/></svg>';

/** The sign-in pages' headers (no framing, no caching: the pages hold CSRF tokens and secrets), with images from this server. */
export const PAGE_HEADERS: Readonly<Record<string, string>> = {
  ...SIGNIN_HEADERS,
  'Content-Security-Policy':
    "default-src 'none'; style-src 'self'; img-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'",
  'Referrer-Policy': 'same-origin',
};

/**
 * The consoles' one script: it shows the copy buttons (hidden without script) and copies the text of the
 * element a button names (`data-copy`) to the clipboard (W3C Clipboard API, `writeText`); where the
 * clipboard is refused it selects the text instead. It is inline and allowed by its hash alone (CSP3
 * §8.4 hash-source), only on the pages that carry it: no other script, inline or not, runs.
 */
export const COPY_SCRIPT =
  "for(const b of document.querySelectorAll('button[data-copy]')){b.hidden=false;b.addEventListener('click',()=>{const e=document.getElementById(b.dataset.copy);if(!e)return;const v=e.textContent;const said=(t)=>{b.textContent=t;setTimeout(()=>{b.textContent='Copy'},2000)};const pick=()=>{const r=document.createRange();r.selectNodeContents(e);const s=getSelection();s.removeAllRanges();s.addRange(r);said('Selected: press Ctrl+C')};if(navigator.clipboard){navigator.clipboard.writeText(v).then(()=>said('Copied'),pick)}else pick()})}";

/** The script's CSP source: `'sha256-<base64 of its SHA-256>'` (CSP3 §8.4). */
export const COPY_SCRIPT_SOURCE = `'sha256-${createHash('sha256').update(COPY_SCRIPT, 'utf8').digest('base64')}'`;

/** PAGE_HEADERS of a page that carries COPY_SCRIPT: the same policy with `script-src` naming the script's hash only. */
export const SCRIPT_PAGE_HEADERS: Readonly<Record<string, string>> = {
  ...PAGE_HEADERS,
  'Content-Security-Policy': `${PAGE_HEADERS['Content-Security-Policy'] as string}; script-src ${COPY_SCRIPT_SOURCE}`,
};

/** A copy button for the text of element `target` (hidden until COPY_SCRIPT runs; without script the text is selectable as it is). */
export function copyButton(target: string, what: string): string {
  return `<button type="button" class="copy" data-copy="${escapeHtml(target)}" aria-label="Copy ${escapeHtml(what)}" hidden>Copy</button>`;
}

/** A response body as shown: JSON indented by two spaces (RFC 8259 text that parses), anything else as it came. */
export function prettyBody(body: string): string {
  const t = body.trim();
  if (!t.startsWith('{') && !t.startsWith('[')) return body;
  try {
    return JSON.stringify(JSON.parse(t), null, 2);
  } catch {
    return body;
  }
}

/** Readable from a 320-pixel-wide phone upward: one column, tables scroll sideways inside their box. */
const STYLE = `*{box-sizing:border-box}body{font-family:system-ui,sans-serif;margin:0;color:#1b1b1b;line-height:1.45}
header{background:#17324d;color:#fff;padding:.6rem 1rem;display:flex;flex-wrap:wrap;gap:.4rem 1.2rem;align-items:center}
header a{color:#fff}header .brand{font-weight:bold;margin-right:auto}
main{max-width:62rem;margin:0 auto;padding:1rem}h1{font-size:1.5rem}h2{font-size:1.2rem;margin-top:1.6rem}
label{display:block;margin:.7rem 0 .2rem;font-weight:600}
input[type=text],input[type=url],input[type=search],input[type=password],select,textarea{display:block;width:100%;max-width:40rem;padding:.45rem;font:inherit}
textarea{min-height:6rem;font-family:ui-monospace,monospace}
button{margin:.6rem .4rem .2rem 0;padding:.45rem 1rem;font:inherit;cursor:pointer}
form.inline{display:inline}form.inline button{margin:.1rem .3rem .1rem 0}
.table{overflow-x:auto}table{border-collapse:collapse;width:100%}th,td{border-bottom:1px solid #ccd;padding:.35rem .5rem;text-align:left;vertical-align:top}
.error,.field-error{color:#a40000;font-weight:600}.field-error{display:block;margin:.2rem 0}
.notice{background:#eef6ee;border-left:4px solid #2a7a2a;padding:.5rem .8rem}.secret{background:#fff6dd;border-left:4px solid #b88a00;padding:.5rem .8rem;word-break:break-all}
.state{font-size:.85rem;border:1px solid #778;border-radius:.3rem;padding:0 .3rem}code,pre{font-family:ui-monospace,monospace;word-break:break-all;white-space:pre-wrap}
pre{background:#f4f4f6;padding:.6rem;max-height:24rem;overflow:auto}.card{border:1px solid #ccd;border-radius:.4rem;padding:.2rem 1rem;margin:.8rem 0}
fieldset{border:1px solid #ccd;border-radius:.4rem;margin:.8rem 0;max-width:42rem}legend{font-weight:600}details{margin:.5rem 0;max-width:42rem}summary{cursor:pointer;font-weight:600;padding:.2rem 0}
:focus{outline:3px solid #1a5fb4;outline-offset:2px}.hint{display:block;color:#555;font-size:.9rem}
.tabs{display:flex;flex-wrap:wrap;gap:.25rem;border-bottom:2px solid #17324d;margin:1rem 0 .8rem;padding:0}
.tabs a{padding:.45rem .8rem;text-decoration:none;color:#17324d;border:1px solid #ccd;border-bottom:none;border-radius:.4rem .4rem 0 0;background:#f4f4f6}
.tabs a[aria-current=page]{background:#17324d;color:#fff;font-weight:600;border-color:#17324d}
.facts{display:grid;grid-template-columns:max-content minmax(0,1fr);gap:.25rem 1rem}.facts dt{font-weight:600}.facts dd{margin:0;min-width:0}
.keyline{display:flex;flex-wrap:wrap;align-items:center;gap:.2rem .5rem;margin:.3rem 0}.keyline code{min-width:0}
button.copy{margin:0;padding:.1rem .6rem;font-size:.85rem}
.method{display:inline-block;min-width:4.3rem;text-align:center;border-radius:.3rem;color:#fff;background:#4a4a5a;font-weight:700;font-size:.85rem;padding:.05rem .3rem;font-family:ui-monospace,monospace}
.m-get{background:#1f6f43}.m-post{background:#1a5fb4}.m-put{background:#8a5a00}.m-patch{background:#6b3fa0}.m-delete{background:#a40000}
details.operation{border:1px solid #ccd;border-radius:.4rem;padding:.3rem .8rem;margin:.5rem 0;max-width:none}details.operation[open]{background:#fbfbfd}
details.operation summary{display:flex;flex-wrap:wrap;gap:.2rem .6rem;align-items:center}details.operation summary code{font-weight:600}
pre.json{word-break:normal;overflow-wrap:anywhere}.status-ok{color:#1f6f43}.status-bad{color:#a40000}
@media (max-width:600px){main{padding:.6rem}h1{font-size:1.25rem}th,td{padding:.3rem}.tabs a{padding:.35rem .55rem;font-size:.95rem}.facts{grid-template-columns:minmax(0,1fr)}.facts dd{margin-bottom:.3rem}}
`;

export interface Frame {
  /** 'devportal', 'publisher' or 'admin': the header's title and links. */
  readonly console: 'devportal' | 'publisher' | 'admin';
  readonly title: string;
  readonly user: string | undefined;
  readonly csrf: string | undefined;
  /** Links of the header: [href, text]. */
  readonly nav: readonly (readonly [string, string])[];
  /** The page carries COPY_SCRIPT (sent with SCRIPT_PAGE_HEADERS). */
  readonly script?: boolean;
}

/** The hidden CSRF field every state-changing form carries (checked on POST: lib/portal/session.ts). */
export function csrfField(csrf: string | undefined): string {
  return `<input type="hidden" name="csrf" value="${escapeHtml(csrf ?? '')}">`;
}

export function page(f: Frame, body: string): string {
  const base = `/${f.console}`;
  const name = f.console === 'devportal' ? 'Developer portal' : f.console === 'publisher' ? 'Publisher' : 'Admin';
  const nav = f.nav.map(([href, text]) => `<a href="${escapeHtml(href)}">${escapeHtml(text)}</a>`).join('\n');
  const who =
    f.user !== undefined
      ? `<span>Signed in as <strong>${escapeHtml(f.user)}</strong></span>\n<form class="inline" method="post" action="${base}/logout">${csrfField(f.csrf)}<button type="submit">Sign out</button></form>`
      : `<a href="${f.console === 'admin' ? '/devportal/login?back=%2Fadmin' : `${base}/login`}">Sign in</a>`;
  return `<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${escapeHtml(f.title)} · throughway ${name}</title>
<link rel="stylesheet" href="${STYLE_PATH}">
<link rel="icon" href="${ICON_PATH}" type="image/svg+xml">
</head>
<body>
<header>
<a class="brand" href="${base}">throughway ${name}</a>
<nav aria-label="Main">${nav}</nav>
${who}
</header>
<main>
<h1>${escapeHtml(f.title)}</h1>
${body}
</main>${f.script === true ? `\n<script>${COPY_SCRIPT}</script>` : ''}
</body>
</html>
`;
}

export function sendHtml(res: http.ServerResponse, status: number, html: string, headers: Record<string, string | string[]> = {}): void {
  sendPage(res, status, html, { ...PAGE_HEADERS, ...headers });
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

export function sendIcon(res: http.ServerResponse): void {
  res.writeHead(200, {
    'Content-Type': 'image/svg+xml',
    'Content-Length': Buffer.byteLength(ICON),
    'Cache-Control': 'max-age=86400',
    'X-Content-Type-Options': 'nosniff',
  });
  res.end(ICON);
}

/** 303 See Other: the answer to a posted form (the browser then GETs `location`). */
export function seeOther(res: http.ServerResponse, location: string, headers: Record<string, string | string[]> = {}): void {
  res.writeHead(303, { Location: location, 'Content-Length': 0, 'Cache-Control': 'no-store', ...headers });
  res.end();
}

/** A labelled text input, with the validator's message beside it when there is one. */
export function field(o: {
  id: string;
  label: string;
  value?: string;
  type?: string;
  error?: string;
  hint?: string;
  required?: boolean;
}): string {
  const errId = `${o.id}-error`;
  const err = o.error !== undefined ? `<span class="field-error" id="${errId}" role="alert">${escapeHtml(o.error)}</span>` : '';
  const hint = o.hint !== undefined ? `<span class="hint" id="${o.id}-hint">${escapeHtml(o.hint)}</span>` : '';
  const described = [o.error !== undefined ? errId : '', o.hint !== undefined ? `${o.id}-hint` : ''].filter((x) => x !== '').join(' ');
  const aria = `${o.error !== undefined ? ' aria-invalid="true"' : ''}${described !== '' ? ` aria-describedby="${described}"` : ''}`;
  const input =
    o.type === 'textarea'
      ? `<textarea id="${o.id}" name="${o.id}"${aria}>${escapeHtml(o.value ?? '')}</textarea>`
      : `<input type="${o.type ?? 'text'}" id="${o.id}" name="${o.id}" value="${escapeHtml(o.value ?? '')}"${o.required === true ? ' required' : ''}${aria}>`;
  return `<label for="${o.id}">${escapeHtml(o.label)}</label>\n${input}\n${hint}${err}`;
}

/** A labelled select. */
export function select(o: {
  id: string;
  label: string;
  options: readonly (readonly [string, string])[];
  value?: string;
  error?: string;
}): string {
  const opts = o.options
    .map(([v, text]) => `<option value="${escapeHtml(v)}"${v === o.value ? ' selected' : ''}>${escapeHtml(text)}</option>`)
    .join('');
  const err = o.error !== undefined ? `<span class="field-error" id="${o.id}-error" role="alert">${escapeHtml(o.error)}</span>` : '';
  return `<label for="${o.id}">${escapeHtml(o.label)}</label>\n<select id="${o.id}" name="${o.id}"${o.error !== undefined ? ` aria-invalid="true" aria-describedby="${o.id}-error"` : ''}>${opts}</select>\n${err}`;
}

/** A one-button form posting `fields` (with the CSRF token) to `action`. */
export function buttonForm(
  action: string,
  label: string,
  csrf: string | undefined,
  fields: Record<string, string> = {},
  ariaLabel?: string,
): string {
  const hidden = Object.entries(fields)
    .map(([k, v]) => `<input type="hidden" name="${escapeHtml(k)}" value="${escapeHtml(v)}">`)
    .join('');
  return `<form class="inline" method="post" action="${escapeHtml(action)}">${csrfField(csrf)}${hidden}<button type="submit"${ariaLabel !== undefined ? ` aria-label="${escapeHtml(ariaLabel)}"` : ''}>${escapeHtml(label)}</button></form>`;
}
