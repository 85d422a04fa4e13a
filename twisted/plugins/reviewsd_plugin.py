from twisted.application.service import ServiceMaker

reviewsd = ServiceMaker(
    "reviewsd",
    "reviewsd.tap",
    "Publish a business's verified customer reviews as a read-only data service.",
    "reviewsd",
)
