/**
 * Message builders and formatters (spec 001, [message_builders], [message_formatters], their `blocking.`
 * twins and the [[custom_*]] tables): content types mapped to the built-in formats of payload.ts. The
 * reference names Java classes; each known class maps to a built-in format, a built-in name may be written
 * directly, and anything else is a configuration error naming the alternatives.
 */
import type { Format } from './payload';
import { FORMATS } from './payload';
import { ThroughwayError } from '../errors';

/** The reference's classes (Axis2, Synapse and the integrator's), by the format they read or write. */
const KNOWN_CLASSES: Readonly<Record<string, Format>> = Object.freeze({
  'org.apache.axis2.builder.ApplicationXMLBuilder': 'xml',
  'org.apache.axis2.builder.SOAPBuilder': 'xml',
  'org.apache.axis2.builder.XFormURLEncodedBuilder': 'form',
  'org.apache.axis2.builder.MultipartFormDataBuilder': 'multipart',
  'org.apache.axis2.format.PlainTextBuilder': 'text',
  'org.apache.axis2.format.BinaryBuilder': 'binary',
  'org.apache.axis2.json.JSONBuilder': 'json',
  'org.apache.axis2.json.JSONBadgerfishOMBuilder': 'json',
  'org.apache.axis2.json.gson.JsonBuilder': 'json',
  'org.apache.synapse.commons.json.JsonBuilder': 'json',
  'org.apache.synapse.commons.json.JsonStreamBuilder': 'json',
  'org.wso2.micro.integrator.core.json.JsonStreamBuilder': 'json',
  'org.apache.axis2.transport.http.ApplicationXMLFormatter': 'xml',
  'org.apache.axis2.transport.http.SOAPMessageFormatter': 'xml',
  'org.apache.axis2.transport.http.XFormURLEncodedFormatter': 'form',
  'org.apache.axis2.transport.http.MultipartFormDataFormatter': 'multipart',
  'org.apache.axis2.format.PlainTextFormatter': 'text',
  'org.apache.axis2.format.BinaryFormatter': 'binary',
  'org.apache.axis2.json.JSONMessageFormatter': 'json',
  'org.apache.axis2.json.JSONBadgerfishMessageFormatter': 'json',
  'org.apache.axis2.json.gson.JsonFormatter': 'json',
  'org.apache.synapse.commons.json.JsonFormatter': 'json',
  'org.apache.synapse.commons.json.JsonStreamFormatter': 'json',
  'org.wso2.micro.integrator.core.json.JsonStreamFormatter': 'json',
});

/** The content type each key of [message_builders] / [message_formatters] stands for (spec 001). */
export const KEY_CONTENT_TYPES: Readonly<Record<string, string>> = Object.freeze({
  application_xml: 'application/xml',
  form_urlencoded: 'application/x-www-form-urlencoded',
  multipart_form_data: 'multipart/form-data',
  text_plain: 'text/plain',
  application_json: 'application/json',
  json_badgerfish: 'application/json/badgerfish',
  text_javascript: 'text/javascript',
  octet_stream: 'application/octet-stream',
  application_binary: 'application/binary',
  text_xml: 'text/xml',
  soap_xml: 'application/soap+xml',
});

/** The defaults: what the reference's default classes do for each content type. */
const DEFAULT_TYPES: Readonly<Record<string, Format>> = Object.freeze({
  'application/xml': 'xml',
  'text/xml': 'xml',
  'application/soap+xml': 'xml',
  'application/x-www-form-urlencoded': 'form',
  'multipart/form-data': 'multipart',
  'text/plain': 'text',
  'application/json': 'json',
  'application/json/badgerfish': 'json',
  'text/javascript': 'json',
  'application/javascript': 'json',
  'application/octet-stream': 'binary',
  'application/binary': 'binary',
});

export class FormatConfigError extends ThroughwayError {
  readonly code = 'MEDIATION_UNKNOWN_CLASS';
  constructor(
    /** The configuration key, e.g. `message_builders.application_json`. */
    readonly key: string,
    readonly value: string,
  ) {
    const kind = key.includes('formatter') ? 'formatter' : 'builder';
    const classes = Object.keys(KNOWN_CLASSES).filter((c) => c.endsWith(kind === 'formatter' ? 'Formatter' : 'Builder'));
    super(
      `${key} = "${value}": unknown message ${kind} class; use a built-in name (${FORMATS.join(', ')}) or one of: ${classes.join(', ')}`,
    );
    this.name = 'FormatConfigError';
  }
}

/** A configured class name -> built-in format; throws FormatConfigError naming the alternatives. */
export function formatOfClass(key: string, value: string): Format {
  const v = value.trim();
  if ((FORMATS as readonly string[]).includes(v)) return v as Format;
  const f = KNOWN_CLASSES[v];
  if (f === undefined) throw new FormatConfigError(key, value);
  return f;
}

/** One direction's table: lower-case media type (no parameters) -> format. */
export class FormatTable {
  private readonly byType: ReadonlyMap<string, Format>;

  constructor(byType: ReadonlyMap<string, Format>) {
    this.byType = byType;
  }

  /**
   * The format of a Content-Type value; structured suffixes (RFC 6838 §4.2.8: +json, +xml) count as
   * their base; unknown types are binary (passed through untouched).
   */
  of(contentType: string | undefined): Format {
    if (contentType === undefined) return 'binary';
    const semi = contentType.indexOf(';');
    const type = (semi < 0 ? contentType : contentType.slice(0, semi)).trim().toLowerCase();
    const f = this.byType.get(type);
    if (f !== undefined) return f;
    if (type.endsWith('+json')) return 'json';
    if (type.endsWith('+xml')) return 'xml';
    return 'binary';
  }
}

/**
 * Builds a table from the defaults, a [message_builders]/[message_formatters] section (key -> class) and
 * its [[custom_*]] entries (content_type, class). `prefix` names the section in errors.
 */
export function buildTable(
  prefix: string,
  section: Readonly<Record<string, string | undefined>>,
  custom: readonly { readonly content_type?: string; readonly class?: string }[],
): FormatTable {
  const map = new Map<string, Format>(Object.entries(DEFAULT_TYPES));
  for (const [key, value] of Object.entries(section)) {
    if (value === undefined) continue;
    const type = KEY_CONTENT_TYPES[key];
    if (type === undefined) continue; // the schema has already warned about unknown keys
    map.set(type, formatOfClass(`${prefix}.${key}`, value));
  }
  custom.forEach((c, i) => {
    if (c.content_type === undefined || c.class === undefined) return;
    map.set(
      c.content_type.trim().toLowerCase(),
      formatOfClass(
        `${prefix.startsWith('blocking.') ? 'blocking.' : ''}custom_${prefix.endsWith('builders') ? 'message_builders' : 'message_formatters'}[${i}].class`,
        c.class,
      ),
    );
  });
  return new FormatTable(map);
}
