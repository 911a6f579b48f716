// A client of the read API: openapi-typescript turns the description into types
// (generated/read.ts), openapi-fetch makes the calls with them. The establishment's API key goes
// in the X-Api-Key header, set once for every request of the client.
import createClient from "openapi-fetch";
import type { components, paths } from "./generated/read";

type Establishment = components["schemas"]["Establishment"];

const apiKey = "the establishment's API key, from the admin API";

const client = createClient<paths>({
  baseUrl: "http://127.0.0.1:8080",
  headers: { "X-Api-Key": apiKey },
});

// establishment returns the establishment's identity, or throws the error text of the answer.
export async function establishment(slug: string): Promise<Establishment> {
  const { data, error, response } = await client.GET("/api/v1/establishments/{slug}", {
    params: { path: { slug } },
  });
  if (error !== undefined) {
    throw new Error(`${response.status} ${error.error}`);
  }
  return data;
}

// sectionNames returns the names of the sections of a menu, in English where translated.
export async function sectionNames(slug: string, menuType: string): Promise<string[]> {
  const { data } = await client.GET("/api/v1/establishments/{slug}/menus/{menu_type_slug}", {
    params: { path: { slug, menu_type_slug: menuType }, query: { locale: "en" } },
  });
  return data?.sections.map((section) => section.name) ?? [];
}

// Each line below must be a type error: the types are the description's, not any.
export async function mistakes(): Promise<void> {
  // @ts-expect-error: the description has no such path.
  await client.GET("/api/v1/restaurants/{slug}", { params: { path: { slug: "chez-marcel" } } });
  // @ts-expect-error: the slug is a required path parameter.
  await client.GET("/api/v1/establishments/{slug}/hours", { params: { path: {} } });
  const { data } = await client.GET("/api/v1/establishments/{slug}", {
    params: { path: { slug: "chez-marcel" } },
  });
  // @ts-expect-error: an establishment has no such property.
  console.log(data?.opening_soon);
  // @ts-expect-error: business_type is one of the values the description lists.
  const kind: Establishment["business_type"] = "food_truck";
  console.log(kind);
}
