/**
 * route_guide.proto (helpers.ts PROTO) as two files, the services importing the messages by file name:
 * the same package, services and methods, so a grpc-js client and backend of PROTO call it through the
 * gateway. Used by the publisher's multi-file tests (docs/grpc.md, "The .proto files in the publisher").
 */
import { PROTO } from './helpers';

const lines = PROTO.split('\n');
/** route_guide.proto's messages in a file of their own (route_messages.proto). */
export const MESSAGES = ['syntax = "proto3";', 'package routeguide;', '', ...lines.filter((l) => l.startsWith('message ')), ''].join('\n');
/** Its services (route_guide.proto), importing route_messages.proto. */
export const SERVICES = lines
  .filter((l) => !l.startsWith('message '))
  .join('\n')
  .replace('package routeguide;\n', 'package routeguide;\nimport "route_messages.proto";\n');
/** MESSAGES with a syntax error (a missing `;`), and its line. */
export const BROKEN_MESSAGES = MESSAGES.replace('Point lo = 1;', 'Point lo = 1');
export const BROKEN_LINE = BROKEN_MESSAGES.split('\n').findIndex((l) => l.includes('Point lo = 1 ')) + 1;

/** A file as playwright's setInputFiles takes it. */
export const upload = (name: string, text: string): { name: string; mimeType: string; buffer: Buffer } => ({
  name,
  mimeType: 'application/octet-stream',
  buffer: Buffer.from(text),
});
