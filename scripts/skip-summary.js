// A test reporter beside `spec`: node's summary counts skipped tests only, so a whole suite skipped
// for lack of Chromium, PostgreSQL or S3 showed as "skipped 0". This one lists every skipped suite
// and test with its reason at the end of the run.
export default async function* skipSummary(source) {
  const suites = [];
  const tests = [];
  for await (const event of source) {
    if (event.type !== 'test:pass' && event.type !== 'test:fail') continue;
    const { skip, name, details, file } = event.data;
    if (skip === undefined || skip === false) continue;
    const why = typeof skip === 'string' ? skip : 'skipped';
    const where = file ? ` (${file.split('/').pop()})` : '';
    (details?.type === 'suite' ? suites : tests).push(`${name}${where}: ${why}`);
  }
  if (suites.length + tests.length === 0) {
    yield 'ℹ skipped suites 0, skipped tests 0\n';
    return;
  }
  yield `ℹ skipped suites ${suites.length} (their tests did not run), skipped tests ${tests.length}\n`;
  for (const line of [...suites, ...tests]) yield `  ﹣ ${line}\n`;
}
