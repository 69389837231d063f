// A response-header rewriter: removes fields that give the backend away and adds fields of its own to
// every forwarded response.
// [throughway.plugin.response-headers] remove = ["X-Powered-By"], add = { "X-Frame-Options" = "DENY" }.
exports.phases = (settings) => {
  const remove = Array.isArray(settings.remove) ? settings.remove.map((n) => String(n).toLowerCase()) : [];
  const add = [];
  for (const [name, value] of Object.entries(settings.add ?? {})) add.push(name, String(value));
  return [
    {
      before: 'send', // the last point of the chain: the call is going to the backend
      phase: {
        name: 'rewrite',
        run(ctx) {
          ctx.dropResponseHeaders = remove;
          ctx.addResponseHeaders = add;
        },
      },
    },
  ];
};
