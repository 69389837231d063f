/**
 * Two OpenAPI documents of one operation for the audit's tests (docs/security-audit.md): a weak one and
 * the same operation hardened against the OWASP API Security Top 10 2023 ruleset.
 */

/** No security scheme, an http:// server, no 4XX or 429 responses, strings without bounds. */
export const WEAK = {
  openapi: '3.0.3',
  info: { title: 'Weak', version: '1.0.0' },
  servers: [{ url: 'http://api.example.com/v1' }],
  paths: {
    '/users/{id}': {
      get: {
        parameters: [{ name: 'id', in: 'path', required: true, schema: { type: 'string' } }],
        responses: {
          '200': {
            description: 'The user',
            content: { 'application/json': { schema: { type: 'object', properties: { name: { type: 'string' } } } } },
          },
        },
      },
    },
  },
};

const count = { type: 'integer', format: 'int32', minimum: 0, maximum: 100000 };
const limited = {
  'RateLimit-Limit': { schema: count },
  'RateLimit-Reset': { schema: count },
  'Access-Control-Allow-Origin': { schema: { type: 'string', format: 'uri', maxLength: 200 } },
};
const error = (description: string, headers: Record<string, unknown> = limited): Record<string, unknown> => ({
  description,
  headers,
  content: { 'application/problem+json': { schema: { $ref: '#/components/schemas/Problem' } } },
});

/** The same operation, hardened: HTTPS, OAuth 2.0, bounded and formatted strings, every error response, rate-limit headers. */
export const HARDENED = {
  openapi: '3.0.3',
  info: {
    title: 'Hardened',
    version: '1.0.0',
    description: 'Users, behind OAuth 2.0.',
    contact: { name: 'API team', email: 'api@example.com', url: 'https://example.com/contact' },
    license: { name: 'Apache-2.0', url: 'https://www.apache.org/licenses/LICENSE-2.0' },
  },
  servers: [{ url: 'https://api.example.com/v1', description: 'Production', 'x-internal': false }],
  tags: [{ name: 'users', description: 'Users' }],
  security: [{ OAuth2: ['users:read'] }],
  paths: {
    '/users/{id}': {
      get: {
        operationId: 'getUser',
        summary: 'A user',
        description: 'One user by its id.',
        tags: ['users'],
        security: [{ OAuth2: ['users:read'] }],
        parameters: [{ name: 'id', in: 'path', required: true, schema: { type: 'string', format: 'uuid', maxLength: 36 } }],
        responses: {
          '200': {
            description: 'The user',
            headers: limited,
            content: { 'application/json': { schema: { $ref: '#/components/schemas/User' } } },
          },
          '400': error('Bad request'),
          '401': error('No valid token'),
          '404': error('No such user'),
          '429': error('Throttled', { ...limited, 'Retry-After': { schema: count } }),
          '500': error('Server error'),
        },
      },
    },
  },
  components: {
    securitySchemes: {
      OAuth2: {
        type: 'oauth2',
        description: 'JWT access tokens as RFC8725 recommends (one algorithm, RS256 refused in favour of PS256 and ES256).',
        flows: {
          authorizationCode: {
            authorizationUrl: 'https://auth.example.com/authorize',
            tokenUrl: 'https://auth.example.com/token',
            refreshUrl: 'https://auth.example.com/token',
            scopes: { 'users:read': 'Read users' },
          },
        },
      },
    },
    schemas: {
      User: {
        type: 'object',
        additionalProperties: false,
        properties: { name: { type: 'string', maxLength: 100, pattern: '^[A-Za-z ]+$' } },
      },
      Problem: {
        type: 'object',
        additionalProperties: false,
        properties: {
          title: { type: 'string', maxLength: 200, pattern: '^[^<>]*$' },
          status: { type: 'integer', format: 'int32', minimum: 100, maximum: 599 },
        },
      },
    },
  },
};
