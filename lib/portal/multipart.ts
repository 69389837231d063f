/**
 * multipart/form-data bodies (RFC 7578), the encoding a browser posts a form with a file input in: the
 * publisher's forms that carry .proto files (docs/grpc.md, "The .proto files in the publisher"). The body
 * is read whole first (index.ts, at most MAX_PROTO_UPLOAD_BODY), then split here; a part's name and file
 * name are taken from its Content-Disposition, its Content-Type is not read (a .proto file is text). A
 * field's value and a file's bytes are kept as they came.
 */

/** One file of a file input. */
export interface FormFile {
  /** The input's name. */
  readonly field: string;
  /** The file's name as the browser sent it (no directory: HTML, "constructing the entry list"). */
  readonly filename: string;
  readonly data: Buffer;
}

export interface MultipartForm {
  readonly fields: URLSearchParams;
  readonly files: readonly FormFile[];
}

/** The most parts one form has (the publisher's create form has about 40 fields, and up to 16 .proto files). */
export const MAX_PARTS = 256;
/** The largest header block of one part. */
const MAX_PART_HEADERS = 8 * 1024;

/** The boundary parameter of a multipart Content-Type (RFC 2046 §5.1.1: 1 to 70 characters); undefined: none. */
export function boundaryOf(contentType: string): string | undefined {
  const m = /;\s*boundary=(?:"([^"]{1,70})"|([^\s;]{1,70}))\s*(?:;|$)/i.exec(contentType);
  return m?.[1] ?? m?.[2];
}

/** A Content-Disposition parameter: quoted (browsers escape `"` and line breaks as %22, %0D, %0A) or a token. */
function param(disposition: string, name: string): string | undefined {
  const m = new RegExp(`;\\s*${name}=(?:"([^"]*)"|([^\\s;]*))`, 'i').exec(disposition);
  const v = m?.[1] ?? m?.[2];
  return v?.replace(/%22/g, '"').replace(/%0D/gi, '\r').replace(/%0A/gi, '\n');
}

/** The fields and files of a multipart/form-data body; a string: why it is not one. */
export function parseMultipart(body: Buffer, boundary: string): MultipartForm | string {
  const fields = new URLSearchParams();
  const files: FormFile[] = [];
  const delimiter = Buffer.from(`--${boundary}`);
  // The first delimiter may follow a preamble (RFC 2046 §5.1.1); every later one follows CRLF.
  let at = body.indexOf(delimiter);
  if (at !== 0 && (at < 2 || body[at - 2] !== 0x0d || body[at - 1] !== 0x0a)) return 'no multipart boundary in the body';
  const next = Buffer.from(`\r\n--${boundary}`);
  for (let parts = 0; ; parts++) {
    at += delimiter.length;
    if (body[at] === 0x2d && body[at + 1] === 0x2d) return { fields, files };
    if (body[at] !== 0x0d || body[at + 1] !== 0x0a) return 'a multipart delimiter is not followed by CRLF';
    if (parts === MAX_PARTS) return `more than ${MAX_PARTS} parts`;
    const start = at + 2;
    const headEnd = body.indexOf('\r\n\r\n', start);
    if (headEnd < 0 || headEnd - start > MAX_PART_HEADERS) return 'a part without its header block';
    const end = body.indexOf(next, headEnd + 4);
    if (end < 0) return 'the body ends before its closing delimiter';
    const headers = body.subarray(start, headEnd).toString('utf8').split('\r\n');
    const disposition = headers.find((h) => /^content-disposition\s*:/i.test(h));
    const name = disposition === undefined ? undefined : param(disposition, 'name');
    if (disposition === undefined || !/:\s*form-data\s*(;|$)/i.test(disposition) || name === undefined)
      return 'a part without Content-Disposition: form-data and a name';
    const data = body.subarray(headEnd + 4, end);
    const filename = param(disposition, 'filename');
    if (filename === undefined) fields.append(name, data.toString('utf8'));
    // A file input left empty is sent as a part with an empty file name and no bytes.
    else if (filename !== '' || data.length > 0) files.push({ field: name, filename, data: Buffer.from(data) });
    at = end + 2;
  }
}
