/**
 * The SDKs of an API in the developer portal (docs/self-service.md, "SDKs"): on the API's page, a
 * download link per language of `[apim.sdk] supported_languages` that throughway builds (lib/sdk), and
 * the other configured languages named as not built; `GET /devportal/apis/{id}/sdk/{language}` answers a
 * zip of the SDK, made from the API's OpenAPI document with the first gateway URL as the API's base.
 */
import { writeZip } from '../sdk/zip';
import { generateSdk, sdkLanguages, type BuiltLanguage } from '../sdk';
import { apiUrls, type CatalogueEntry } from './catalogue';
import { type Call, problem } from './context';
import { apiDocument } from './definition';
import { escapeHtml as h, PAGE_HEADERS } from './html';

type ShownApi = CatalogueEntry & { api: NonNullable<CatalogueEntry['api']> };

/** The SDK section of an API's page ('' without an OpenAPI document or self-service). */
export function sdkHtml(c: Call, e: ShownApi): string {
  const s = c.parts.selfService;
  if (s === undefined || e.api.definition === undefined) return '';
  const { built, notBuilt } = sdkLanguages(s.settings.sdk);
  const links = built.map((l) => `<li><a href="/devportal/apis/${encodeURIComponent(e.id)}/sdk/${l}" download>${h(l)}</a></li>`).join('');
  const rest = notBuilt.length > 0 ? `<p class="hint">Not built by throughway: ${h(notBuilt.join(', '))}.</p>` : '';
  return `<h2 id="sdks">SDKs</h2>${built.length > 0 ? `<ul>${links}</ul>` : '<p>No SDK language is configured.</p>'}${rest}`;
}

function fileName(e: ShownApi, language: string): string {
  return `${`${e.api.name}-${e.api.version}-${language}`.replace(/[^A-Za-z0-9._-]+/g, '-').slice(0, 120)}.zip`;
}

export function sdkDownload(c: Call, e: ShownApi | undefined, language: string): void {
  const s = c.parts.selfService;
  if (e === undefined || s === undefined) return problem(c, 'devportal', 404, 'No such API', 'This API is not in the catalogue.');
  if (!(sdkLanguages(s.settings.sdk).built as string[]).includes(language))
    return problem(
      c,
      'devportal',
      404,
      'No such SDK',
      `throughway builds no ${language.slice(0, 50)} SDK here; see the API's page for the languages offered.`,
    );
  const d = apiDocument(e.api);
  if (d === undefined || 'error' in d)
    return problem(
      c,
      'devportal',
      404,
      'No OpenAPI document',
      d === undefined ? 'This API names no OpenAPI document: SDKs are made from it.' : `The OpenAPI document cannot be read: ${d.error}`,
    );
  const base = apiUrls(e.api, c.parts.gateways())[0]?.url;
  if (base === undefined)
    return problem(c, 'devportal', 404, 'No gateway URL', 'No gateway URL is known: configure [[apim.gateway.environment]] http_endpoint.');
  const files = generateSdk(
    language as BuiltLanguage,
    { doc: d.doc as Record<string, unknown>, api: e.api, baseUrl: base },
    s.settings.sdk,
  );
  if ('error' in files) return problem(c, 'devportal', 500, 'SDK not built', files.error);
  const zip = writeZip(files);
  c.res.writeHead(200, {
    ...PAGE_HEADERS,
    'Content-Type': 'application/zip',
    'Content-Length': zip.length,
    'Content-Disposition': `attachment; filename="${fileName(e, language)}"`,
  });
  c.res.end(zip);
}
