/**
 * Process switches read from the environment by the configuration (lib/config/switches.ts) and handed to
 * the transport: THROUGHWAY_DIRECT_WRITES=0 and NODE_PENDING_DEPRECATION=1 turn direct writes off, in the
 * settings a gateway gives its transport.
 */
import t from 'tap';
import { processSwitches } from '../../lib/config/switches';
import { loadConfig } from '../../lib/config/load';
import { transportSettingsFrom } from '../../lib/gateway/transport-settings';

t.test('the environment switches direct writes', async (t) => {
  t.equal(processSwitches({}).directWrites, true, 'on by default');
  t.equal(processSwitches({ THROUGHWAY_DIRECT_WRITES: '0' }).directWrites, false, 'THROUGHWAY_DIRECT_WRITES=0: off');
  t.equal(processSwitches({ THROUGHWAY_DIRECT_WRITES: '1' }).directWrites, true, 'another value: on');
  t.equal(processSwitches({ NODE_PENDING_DEPRECATION: '1' }).directWrites, false, 'NODE_PENDING_DEPRECATION=1: off');
});

t.test("a gateway's transport settings carry the switch", async (t) => {
  const loaded = loadConfig({
    text: '[server]\nhostname = "localhost"\n[super_admin]\nusername = "admin"\npassword = "admin"\n[database.apim_db]\ntype = "h2"\nusername = "u"\npassword = "p"\n',
    file: 'deployment.toml',
  });
  if (!loaded.ok) throw new Error(JSON.stringify(loaded.diagnostics));
  const before = process.env.THROUGHWAY_DIRECT_WRITES;
  t.teardown(() => {
    if (before === undefined) delete process.env.THROUGHWAY_DIRECT_WRITES;
    else process.env.THROUGHWAY_DIRECT_WRITES = before;
  });
  process.env.THROUGHWAY_DIRECT_WRITES = '0';
  t.equal(transportSettingsFrom(loaded.config).directWrites, false);
  delete process.env.THROUGHWAY_DIRECT_WRITES;
  t.equal(transportSettingsFrom(loaded.config).directWrites, true);
});
