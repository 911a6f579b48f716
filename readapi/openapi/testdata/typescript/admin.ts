// A client of the admin API: openapi-typescript turns its description into types
// (generated/admin.ts), openapi-fetch makes the calls with them. The admin token goes in the
// Authorization header, set once for every request of the client.
import createClient from "openapi-fetch";
import type { components, paths } from "./generated/admin";

type ImportDocument = components["schemas"]["ImportDocument"];

const adminToken = "the admin token, from <data-dir>/admin-token";

const client = createClient<paths>({
  baseUrl: "http://127.0.0.1:8081",
  headers: { Authorization: `Bearer ${adminToken}` },
});

// importEstablishment imports doc under slug, waiting until it is served, and returns the API
// key the import issued, if it issued one.
export async function importEstablishment(slug: string, doc: ImportDocument): Promise<string | undefined> {
  const { data, error, response } = await client.PUT("/admin/v1/establishments/{slug}", {
    params: { path: { slug }, query: { wait: true } },
    body: doc,
  });
  if (error !== undefined) {
    throw new Error(`${response.status} ${error.error}: ${(error.details ?? []).join("; ")}`);
  }
  return data.api_key ?? undefined;
}

// timezone returns the time zone of an establishment as the log has it.
export async function timezone(slug: string): Promise<string | null | undefined> {
  const { data } = await client.GET("/admin/v1/establishments/{slug}", { params: { path: { slug } } });
  return data?.establishment.timezone;
}

// registerWebhook registers an HTTPS receiver and returns its id and signing secret.
export async function registerWebhook(slug: string, url: string): Promise<{ id: string; secret: string } | undefined> {
  const { data } = await client.POST("/admin/v1/establishments/{slug}/webhooks", {
    params: { path: { slug } },
    body: { url },
  });
  return data?.endpoint === undefined ? undefined : { id: data.endpoint.id, secret: data.endpoint.secret };
}

// Each line below must be a type error: the types are the description's, not any.
export async function mistakes(): Promise<void> {
  // @ts-expect-error: the description has no such path.
  await client.GET("/admin/v1/restaurants/{slug}", { params: { path: { slug: "chez-marcel" } } });
  // @ts-expect-error: an import document needs a name.
  const nameless: ImportDocument = { slug: "chez-marcel" };
  // @ts-expect-error: business_type is one of the values the description lists.
  const kind: ImportDocument["business_type"] = "food_truck";
  // @ts-expect-error: a registration's url is a string.
  await client.POST("/admin/v1/establishments/{slug}/webhooks", { params: { path: { slug: "x" } }, body: { url: 443 } });
  console.log(nameless, kind);
}
