/**
 * server.offset is added to every listening port (spec 000, [server]; default ports spec 002, part 4),
 * and an effective port above 65535 is an error naming server.offset.
 */
import t from 'tap';
import { brief, errors, load } from './helpers';

t.test('the default ports', async (t) => {
  const r = load('');
  t.match(r.ports, {
    offset: 0,
    managementHttps: 9443,
    managementHttp: 9763,
    passthruHttp: 8280,
    passthruHttps: 8243,
    ws: 9099,
    wss: 8099,
  });
});

t.test('offset 1 moves every port by one', async (t) => {
  const r = load('[server]\noffset = 1\n');
  t.same(brief(r), []);
  t.match(r.ports, {
    offset: 1,
    managementHttps: 9444,
    managementHttp: 9764,
    passthruHttp: 8281,
    passthruHttps: 8244,
    ws: 9100,
    wss: 8100,
    demo: 9001,
  });
});

t.test('configured ports get the offset too', async (t) => {
  const r = load(
    '[server]\noffset = 10\n[transport.passthru_http]\nlistener.parameters.port = 18080\n[transport.https.properties]\nport = 19443\n',
  );
  t.same(brief(r), []);
  t.equal(r.ports.passthruHttp, 18090);
  t.equal(r.ports.managementHttps, 19453);
});

t.test('port 0 (any free port) stays 0', async (t) => {
  const r = load('[server]\noffset = 5\n[transport.passthru_http]\nlistener.parameters.port = 0\n');
  t.equal(r.ports.passthruHttp, 0);
  t.equal(r.ports.passthruHttps, 8248);
});

t.test('an effective port above 65535 is an error naming server.offset on its line', async (t) => {
  const r = load('[server]\nhostname = "localhost"\noffset = 60000\n');
  const e = errors(r);
  t.equal(e.length, 1, 'one diagnostic, on the key to change');
  t.match(e[0], { code: 'CONFIG_RANGE', key: 'server.offset', line: 3, expected: 'an offset from -8098 to 55772' });
  t.match(e[0]?.message, 'management HTTPS 9443 + 60000 = 69443');
  t.match(e[0]?.message, 'gateway HTTP 8280 + 60000 = 68280');
  t.notOk(r.ok);
  const near = load('[server]\noffset = 55000\n');
  t.same(errors(near), [], 'ports throughway never opens (throttle event sync 11224) do not limit the offset');
  t.equal(near.ports.passthruHttp, 63280);
});

t.test('two opened listeners on one effective port conflict', async (t) => {
  const r = load('[transport.ws]\nsender.enable = true\nport = 8280\n');
  t.match(errors(r), [{ code: 'CONFIG_PORT_CONFLICT', key: 'transport.ws.port', line: 3 }]);
  const off = load('[transport.ws]\nsender.enable = false\nport = 8280\n');
  t.same(errors(off), [], 'a listener that is off does not conflict');
});
