/**
 * Runs a JMeter test plan headless with Debian's jmeter (/usr/bin/jmeter, JMeter 2.13). Debian's
 * xstream (1.4.18 and later) refuses every class unless permitted, and JMeter 2.13 permits none, so
 * `jmeter -n -t` fails on any plan with ForbiddenClassException: org.apache.jmeter.save.ScriptWrapper.
 * When it does, the plan runs through a launcher compiled here that grants JMeter's two XStream
 * instances the permission (XStream's AnyTypePermission: the plan is our own) and then calls JMeter's own
 * NewDriver with the same arguments: the same engine, samplers and result file.
 */
import { execFile } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);
export const JMETER = '/usr/bin/jmeter';
const HOME = '/usr/share/jmeter';

const LAUNCHER = `import java.lang.reflect.Field;

public class TwJMeter {
  public static void main(String[] args) throws Throwable {
    String home = System.getProperty("jmeter.home");
    org.apache.jmeter.util.JMeterUtils.setJMeterHome(home);
    org.apache.jmeter.util.JMeterUtils.loadJMeterProperties(home + "/bin/jmeter.properties");
    Class<?> ss = Class.forName("org.apache.jmeter.save.SaveService");
    Class<?> perm = Class.forName("com.thoughtworks.xstream.security.TypePermission");
    Object any = Class.forName("com.thoughtworks.xstream.security.AnyTypePermission").getField("ANY").get(null);
    for (String name : new String[] { "JMXSAVER", "JTLSAVER" }) {
      Field f = ss.getDeclaredField(name);
      f.setAccessible(true);
      Object xs = f.get(null);
      xs.getClass().getMethod("addPermission", perm).invoke(xs, any);
    }
    org.apache.jmeter.NewDriver.main(args);
  }
}
`;

/** Why the HTTP sampler cannot run here, or undefined. */
export function jmeterMissing(): string | undefined {
  if (!fs.existsSync(JMETER)) return `no jmeter at ${JMETER} (Debian package jmeter; .ci/apt-packages installs it)`;
  if (!fs.existsSync(path.join(HOME, 'lib', 'ext', 'ApacheJMeter_http.jar')))
    return 'no JMeter HTTP sampler (Debian package jmeter-http; .ci/apt-packages installs it)';
  return undefined;
}

/** Runs `jmeter <args>` in `dir`; what it printed, and how it was run. */
export async function runJMeter(
  dir: string,
  args: readonly string[],
  javac: string,
  java: string,
): Promise<{ output: string; via: 'jmeter' | 'launcher' }> {
  const direct = await run(JMETER, [...args], { cwd: dir, timeout: 180_000 }).then(
    (r) => r.stdout + r.stderr,
    (err: { stdout?: string; stderr?: string }) => `${err.stdout ?? ''}${err.stderr ?? ''}`,
  );
  if (!direct.includes('ForbiddenClassException')) return { output: direct, via: 'jmeter' };
  const jars = [
    path.join(HOME, 'bin', 'ApacheJMeter.jar'),
    ...['lib', path.join('lib', 'ext')].flatMap((d) =>
      fs
        .readdirSync(path.join(HOME, d))
        .filter((f) => f.endsWith('.jar'))
        .map((f) => path.join(HOME, d, f)),
    ),
  ];
  const src = path.join(dir, 'launcher');
  fs.mkdirSync(src, { recursive: true });
  fs.writeFileSync(path.join(src, 'TwJMeter.java'), LAUNCHER);
  await run(javac, ['-cp', jars.join(':'), '-d', src, path.join(src, 'TwJMeter.java')], { timeout: 120_000 });
  const r = await run(java, [`-Djmeter.home=${HOME}`, '-cp', [src, ...jars].join(':'), 'TwJMeter', ...args], {
    cwd: dir,
    timeout: 180_000,
  });
  return { output: r.stdout + r.stderr, via: 'launcher' };
}
