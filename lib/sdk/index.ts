/**
 * Client SDKs generated from an API's OpenAPI document (docs/self-service.md, "SDKs"), for the languages
 * of `[apim.sdk] supported_languages` that throughway builds: `javascript` (javascript.ts), `java`
 * (java.ts) and `jmeter` (jmeter.ts), with its own templates and nothing fetched at run time. The other
 * languages the spec allows (android, csharp, dart, groovy, perl, php, python, ruby, swift5, clojure)
 * are listed on the API's page as not built, and not offered. A generator takes plain inputs (the
 * document, the API's resources, the gateway URL) and returns the files of the SDK by path.
 */
import { javaNamesProblem, javaSdk } from './java';
import { javascriptSdk } from './javascript';
import { jmeterSdk } from './jmeter';
import { sdkApi } from './operations';

export { sdkApi, type SdkApi, type SdkOperation } from './operations';

/** The languages throughway builds. */
export const BUILT_LANGUAGES = ['javascript', 'java', 'jmeter'] as const;
export type BuiltLanguage = (typeof BUILT_LANGUAGES)[number];

/** `[apim.sdk]`, read once. */
export interface SdkSettings {
  readonly groupId: string;
  readonly artifactId: string;
  readonly modelPackage: string;
  readonly apiPackage: string;
  /** supported_languages as configured. */
  readonly languages: readonly string[];
}

/** What throughway writes when `[apim.sdk]` leaves a name out (the spec's defaults are the reference vendor's). */
export const SDK_DEFAULTS = Object.freeze({
  groupId: 'org.throughway.client',
  artifactId: 'throughway-client',
  modelPackage: 'org.throughway.client.model',
  apiPackage: 'org.throughway.client.api',
});

/** The configured languages split into those offered and those listed as not built. */
export function sdkLanguages(s: SdkSettings): { built: BuiltLanguage[]; notBuilt: string[] } {
  const built = s.languages.filter((l): l is BuiltLanguage => (BUILT_LANGUAGES as readonly string[]).includes(l));
  return { built, notBuilt: s.languages.filter((l) => !(BUILT_LANGUAGES as readonly string[]).includes(l)) };
}

export interface SdkInput {
  /** The API's OpenAPI 3 document, parsed. */
  readonly doc: Record<string, unknown>;
  readonly api: {
    readonly name: string;
    readonly version: string;
    readonly resources: readonly { readonly path: string; readonly methods: readonly string[] }[];
  };
  /** The API's URL on the gateway, context and version included (`http://gw:8280/pizzashack/1.0.0`). */
  readonly baseUrl: string;
}

/** The files of one SDK by path, or why it cannot be built. */
export function generateSdk(language: BuiltLanguage, input: SdkInput, s: SdkSettings): Map<string, string> | { error: string } {
  const api = sdkApi(input.doc, input.api);
  if (language === 'javascript') return javascriptSdk(api, input.baseUrl, s.artifactId);
  if (language === 'jmeter') return jmeterSdk(api, input.baseUrl);
  const why = javaNamesProblem(s);
  if (why !== undefined) return { error: `[apim.sdk] ${why}` };
  return javaSdk(api, input.baseUrl, s);
}
