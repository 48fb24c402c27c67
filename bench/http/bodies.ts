/** The bytes both baselines answer, the same as the service's. */
export const healthBody = () => ({ status: "ok" })

export const notFoundBody = (requestId: string, docsBaseUrl: string) => ({
  error: {
    code: "not_found",
    message: "No such resource or route.",
    status: 404,
    request_id: requestId,
    docs_url: `${docsBaseUrl}/docs/errors#not_found`
  }
})
