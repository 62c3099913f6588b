import { XMLParser, XMLValidator } from "fast-xml-parser";

/**
 * The common JUnit schema (Jenkins' junit-10.xsd, what GitLab and most CI test reporters read),
 * checked on the output of an independent parser: well-formedness, element order and counts,
 * required and allowed attributes, and the numeric attribute types.
 */
type Rule = {
  required?: string[];
  allowed: string[];
  /** Child elements in this order, each with [min, max] occurrences. */
  children?: [string, number, number][];
  text?: boolean;
};

const MANY = Number.POSITIVE_INFINITY;
const SCHEMA: Record<string, Rule> = {
  testsuites: {
    allowed: ["name", "time", "tests", "failures", "disabled", "errors"],
    children: [["testsuite", 0, MANY]],
  },
  testsuite: {
    required: ["name", "tests"],
    allowed: [
      "name",
      "tests",
      "failures",
      "errors",
      "time",
      "disabled",
      "skipped",
      "timestamp",
      "hostname",
      "id",
      "package",
      "file",
      "log",
      "url",
      "version",
      "group",
    ],
    children: [
      ["properties", 0, 1],
      ["testcase", 0, MANY],
      ["system-out", 0, 1],
      ["system-err", 0, 1],
    ],
  },
  properties: { allowed: [], children: [["property", 0, MANY]] },
  property: { required: ["name", "value"], allowed: ["name", "value"] },
  testcase: {
    required: ["name"],
    allowed: ["name", "assertions", "time", "classname", "status", "class", "file", "line"],
    children: [
      ["skipped", 0, 1],
      ["error", 0, MANY],
      ["failure", 0, MANY],
      ["system-out", 0, MANY],
      ["system-err", 0, MANY],
    ],
  },
  skipped: { allowed: ["message"], text: true },
  error: { allowed: ["message", "type"], text: true },
  failure: { allowed: ["message", "type"], text: true },
  "system-out": { allowed: [], text: true },
  "system-err": { allowed: [], text: true },
};
const INTEGER = new Set(["tests", "failures", "errors", "skipped", "disabled", "assertions", "line"]);

export interface XmlElement {
  name: string;
  attributes: Record<string, string>;
  children: XmlElement[];
  text: string;
}

function toElement(node: any): XmlElement {
  const name = Object.keys(node).find((k) => k !== ":@")!;
  const content = node[name] as any[];
  return {
    name,
    attributes: node[":@"] ?? {},
    children: content.filter((c) => !("#text" in c)).map(toElement),
    text: content
      .filter((c) => "#text" in c)
      .map((c) => c["#text"])
      .join(""),
  };
}

function check(element: XmlElement, where: string, problems: string[]) {
  const rule = SCHEMA[element.name];
  if (!rule) {
    problems.push(`${where}: element <${element.name}> is not in the schema`);
    return;
  }
  for (const name of rule.required ?? [])
    if (!(name in element.attributes)) problems.push(`${where}: missing attribute ${name}`);
  for (const [name, value] of Object.entries(element.attributes)) {
    if (!rule.allowed.includes(name)) problems.push(`${where}: attribute ${name} not allowed`);
    if (INTEGER.has(name) && !/^\d+$/.test(value))
      problems.push(`${where}: ${name}="${value}" is not an integer`);
    if (name === "time" && !/^\d+(\.\d+)?$/.test(value))
      problems.push(`${where}: time="${value}" is not a decimal`);
  }
  if (!rule.text && element.text.trim() !== "") problems.push(`${where}: text not allowed`);
  let index = 0;
  for (const [child, min, max] of rule.children ?? []) {
    let count = 0;
    while (element.children[index]?.name === child) {
      check(element.children[index]!, `${where}/${child}[${count}]`, problems);
      index += 1;
      count += 1;
    }
    if (count < min || count > max) problems.push(`${where}: ${count} <${child}> (allowed ${min}..${max})`);
  }
  if (index < element.children.length)
    problems.push(`${where}: unexpected <${element.children[index]!.name}> (wrong element or order)`);
}

/** Parses a JUnit report; throws with every schema problem found. */
export function parseJUnit(xml: string): XmlElement {
  const valid = XMLValidator.validate(xml);
  if (valid !== true) throw new Error(`not well-formed XML: ${JSON.stringify(valid.err)}`);
  const nodes = new XMLParser({
    preserveOrder: true,
    ignoreAttributes: false,
    attributeNamePrefix: "",
    parseAttributeValue: false,
    parseTagValue: false,
    trimValues: false,
    ignoreDeclaration: true,
  }).parse(xml) as any[];
  const roots = nodes.filter((n) => !("#text" in n)).map(toElement);
  if (roots.length !== 1 || roots[0]!.name !== "testsuites")
    throw new Error(`the root must be one <testsuites>, got ${roots.map((r) => r.name).join(", ")}`);
  const problems: string[] = [];
  check(roots[0]!, "testsuites", problems);
  if (problems.length) throw new Error(`not valid JUnit:\n${problems.join("\n")}`);
  return roots[0]!;
}
