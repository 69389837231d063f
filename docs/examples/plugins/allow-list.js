// A header-based allow list: only calls whose X-Client-Id field is one of the configured ids reach the
// backend; any other call is answered 403 with a fault code of the plugin's own.
// [throughway.plugin.allow-list] ids = ["web", "batch"], header = "X-Client-Id" (the default).
const { customFault } = require('throughway');

exports.phases = (settings) => {
  const ids = new Set(Array.isArray(settings.ids) ? settings.ids : []);
  const header = String(settings.header ?? 'X-Client-Id').toLowerCase();
  const denied = { fault: customFault({ code: 990403, status: 403, message: 'Client not allowed', description: `The ${header} field names no allowed client` }) };
  return [
    {
      after: 'route', // the API is known here (ctx.api), before authentication spends work on the call
      phase: {
        name: 'check',
        run(ctx) {
          const h = ctx.req.headers; // raw [name, value, ...] pairs
          for (let i = 0; i < h.length; i += 2) if (h[i].toLowerCase() === header && ids.has(h[i + 1])) return undefined;
          return denied;
        },
      },
    },
  ];
};
