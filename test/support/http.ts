/** The parsed JSON body of a response; tests assert its shape themselves. */
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export async function json(response: Response): Promise<any> {
  return response.json();
}
