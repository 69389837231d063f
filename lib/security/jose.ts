/**
 * jose, required on the first token the gateway judges or the first key it imports, not at
 * `require('throughway')`: its module graph costs more start-up time than the rest of the transport and
 * gateway together (docs/performance.md, "Import and start-up"). Node caches the module; later calls are
 * one comparison.
 */
import type * as Jose from 'jose';
import { load } from '../config/packages';

let loaded: typeof Jose | undefined;

export function jose(): typeof Jose {
  return (loaded ??= load<typeof Jose>('jose', 'an API with OAuth2 or JWT security'));
}
