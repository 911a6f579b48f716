// Checks JSON-LD documents against schema.org's context, release 30.0, which
// schemaorgcontext.jsonld holds as published (schemaorg/schemaorg,
// data/releases/30.0/schemaorgcontext.jsonld; CC BY-SA 3.0, see README.md).
//
//   node check.mjs <document.json>...
//
// Each document is expanded with jsonld.js in safe mode, which fails on lossy
// processing, with no network: the context is answered from the file, any other
// URL is refused. Safe mode lets some losses through (a null value is dropped in
// silence, a misspelt term becomes a schema.org IRI through @vocab), so the
// document is then walked along its expansion: every key other than @context
// must be there with as many values, each value unchanged, every property and
// type must be a term the context defines, and every @id an absolute IRI. Each
// offence is reported with the document's path and its JSON pointer; the exit
// status is 1 if there is any.
import { readFileSync } from "node:fs";
import jsonld from "jsonld";

const contextFile = new URL("schemaorgcontext.jsonld", import.meta.url);
const context = JSON.parse(readFileSync(contextFile, "utf8"));

// The URLs under which schema.org publishes its context.
const contextURLs = new Set(
  ["https://schema.org", "http://schema.org"].flatMap((u) => [u, `${u}/`, `${u}/docs/jsonldcontext.jsonld`]),
);

async function documentLoader(url) {
  if (!contextURLs.has(url)) {
    throw new Error(`refused to load ${url}: only schema.org's context is known, from ${contextFile.pathname}`);
  }
  return { contextUrl: null, documentUrl: url, document: context };
}

// The context's definitions: keyword aliases, prefixes, and the IRI of each term.
const definitions = context["@context"];
const vocab = definitions["@vocab"];
const prefixes = new Map();
const aliases = new Map();
const termIRIs = new Map();
for (const [name, def] of Object.entries(definitions)) {
  if (name.startsWith("@")) continue;
  if (typeof def === "string") {
    (def.startsWith("@") ? aliases : prefixes).set(name, def);
  } else {
    termIRIs.set(name, def["@id"]);
  }
}
function expandIRI(iri) {
  const colon = iri.indexOf(":");
  if (colon > 0 && prefixes.has(iri.slice(0, colon))) {
    return prefixes.get(iri.slice(0, colon)) + iri.slice(colon + 1);
  }
  return iri;
}
for (const [name, iri] of termIRIs) termIRIs.set(name, expandIRI(iri));
const definedIRIs = new Set(termIRIs.values());

// expandedKey is the key under which the expansion holds the value of key.
function expandedKey(key) {
  if (key.startsWith("@")) return key;
  if (aliases.has(key)) return aliases.get(key);
  if (termIRIs.has(key)) return termIRIs.get(key);
  if (key.includes(":")) return expandIRI(key);
  return vocab + key;
}

const pointer = (tokens) => tokens.map((t) => `/${String(t).replaceAll("~", "~0").replaceAll("/", "~1")}`).join("");
const isObject = (v) => typeof v === "object" && v !== null && !Array.isArray(v);
const absoluteIRI = /^[A-Za-z][A-Za-z0-9+.-]*:/;

// walk compares the node or value object given, at path, with its expansion and
// calls report for each offence.
function walk(given, expanded, path, report) {
  const accounted = new Set();
  for (const [key, value] of Object.entries(given)) {
    const at = [...path, key];
    if (key === "@context") {
      if (path.length > 0) report(at, "a context other than the document's");
      continue;
    }
    const iri = expandedKey(key);
    accounted.add(iri);
    if (!(iri in expanded)) {
      report(at, `dropped from the expansion (${iri})`);
      continue;
    }
    if (!iri.startsWith("@") && !definedIRIs.has(iri)) {
      report(at, `${iri} is not a term of schema.org's context`);
    }
    const got = expanded[iri];
    if (iri === "@type") {
      const types = [value].flat();
      const gotTypes = [got].flat();
      if (gotTypes.length !== types.length) {
        report(at, `${types.length} type(s), ${gotTypes.length} in the expansion`);
      }
      for (const [i, t] of gotTypes.entries()) {
        if (!definedIRIs.has(t)) report(Array.isArray(value) ? [...at, i] : at, `type ${t} is not a term of schema.org's context`);
      }
      continue;
    }
    if (iri.startsWith("@")) {
      if ((iri === "@id" || iri === "@value") && got !== value) {
        report(at, `${JSON.stringify(value)} expands to ${JSON.stringify(got)}`);
      } else if (iri === "@id" && !absoluteIRI.test(got)) {
        report(at, `${JSON.stringify(got)} is not an absolute IRI`);
      }
      continue;
    }
    const values = Array.isArray(value) ? value : [value];
    if (!Array.isArray(got) || got.length !== values.length) {
      report(at, `${values.length} value(s), ${Array.isArray(got) ? got.length : 0} in the expansion`);
      continue;
    }
    for (const [i, v] of values.entries()) {
      const vat = Array.isArray(value) ? [...at, i] : at;
      const e = got[i];
      if (Array.isArray(v)) {
        report(vat, "an array in an array");
      } else if (isObject(v)) {
        if (isObject(e)) walk(v, e, vat, report);
        else report(vat, `expands to ${JSON.stringify(e)}`);
      } else if (isObject(e) && "@id" in e && !("@value" in e)) {
        if (e["@id"] !== v) report(vat, `${JSON.stringify(v)} expands to the IRI ${JSON.stringify(e["@id"])}`);
        else if (!absoluteIRI.test(e["@id"])) report(vat, `${JSON.stringify(v)} is not an absolute IRI`);
      } else if (!isObject(e) || e["@value"] !== v) {
        report(vat, `${JSON.stringify(v)} expands to ${JSON.stringify(e)}`);
      }
    }
  }
  for (const key of Object.keys(expanded)) {
    if (!accounted.has(key)) report(path, `the expansion holds ${key}, which the document does not`);
  }
}

async function check(file) {
  const offences = [];
  const report = (tokens, message) => offences.push(`${file}: ${pointer(tokens) || "/"}: ${message}`);
  let doc;
  try {
    doc = JSON.parse(readFileSync(file, "utf8"));
  } catch (err) {
    return [`${file}: ${err.message}`];
  }
  if (!isObject(doc)) return [`${file}: not a JSON object`];
  if (!contextURLs.has(doc["@context"])) {
    report(["@context"], `${JSON.stringify(doc["@context"])} is not schema.org's context URL`);
    return offences;
  }
  let expanded;
  try {
    expanded = await jsonld.expand(doc, { documentLoader, safe: true });
  } catch (err) {
    const event = err.details?.event;
    const where = event?.details?.property ?? event?.details?.term ?? "";
    return [`${file}: jsonld.js, safe mode: ${err.message}${event ? ` ${event.code}: ${event.message}` : ""}${where ? ` (${where})` : ""}`];
  }
  if (expanded.length !== 1) {
    report([], `expands to ${expanded.length} nodes, not one`);
    return offences;
  }
  walk(doc, expanded[0], [], report);
  return offences;
}

const files = process.argv.slice(2);
if (files.length === 0) {
  console.error("usage: node check.mjs <document.json>...");
  process.exit(2);
}
let failed = false;
for (const file of files) {
  const offences = await check(file);
  for (const o of offences) console.error(o);
  if (offences.length > 0) failed = true;
  else console.log(`${file}: expands with schema.org's context, every term kept`);
}
process.exit(failed ? 1 : 0);
